import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GatewayHarness, startGatewayHarness } from "../support/gateway-harness";

/**
 * The mistakes a newcomer makes first each get an answer that says what to do: a base URL of `…/v1`, the
 * bare host or `…/llm` (a 404 naming `/llm/v1`), `curl -d` without a Content-Type (send
 * `Content-Type: application/json`), and no Authorization header ("Missing API key", still 401/110).
 */

let harness: GatewayHarness;
let key: string;

beforeAll(async () => {
  harness = await startGatewayHarness({ label: "error_hints" });
  const session = await harness.session("newcomer");
  key = (await harness.issueKey(session)).key;
  await harness.topUp({ kind: "user", id: "newcomer" }, "100");
}, 60_000);
afterAll(async () => {
  await harness?.close();
});

const hello = { model: "alpha-5.4-mini", messages: [{ role: "user" as const, content: "Hello" }] };

describe("a wrong base URL", () => {
  it.each([
    ["…/v1", "/v1"],
    ["the bare host", ""],
    ["…/llm", "/llm"],
  ])(
    "given the official client with base URL %s, then chat and models say to use /llm/v1 with 404/120",
    async (_name, suffix) => {
      const client = new OpenAI({ apiKey: key, baseURL: `${harness.url}${suffix}`, maxRetries: 0 });

      for (const call of [() => client.chat.completions.create(hello), () => client.models.list()]) {
        const error = await call().then(
          () => undefined,
          (failure: unknown) => failure,
        );
        expect(error).toBeInstanceOf(OpenAI.NotFoundError);
        const notFound = error as InstanceType<typeof OpenAI.NotFoundError>;
        expect(notFound.error).toMatchObject({ code: 120 });
        expect(notFound.message).toContain(`The API's base URL is ${harness.url}/llm/v1`);
      }
    },
  );
});

describe("a body without a JSON Content-Type", () => {
  it("given curl -d (form encoding), then 400/100 says to send Content-Type: application/json, on generation and on key routes", async () => {
    const generation = await fetch(`${harness.baseUrl}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/x-www-form-urlencoded" },
      body: JSON.stringify(hello),
    });
    expect(generation.status).toBe(400);
    const body = (await generation.json()) as { status: number; message: string };
    expect(body.status).toBe(100);
    expect(body.message).toContain("Content-Type: application/json");
    expect(body.message).toContain("application/x-www-form-urlencoded");

    const session = await harness.session("newcomer");
    const keys = await fetch(`${harness.url}/llm/apis`, {
      method: "POST",
      headers: { authorization: `Bearer ${session}`, "content-type": "application/x-www-form-urlencoded" },
      body: "name=mine",
    });
    expect(keys.status).toBe(400);
    expect(((await keys.json()) as { message: string }).message).toContain("Content-Type: application/json");
  });
});

describe("no Authorization header", () => {
  it("is 401/110 saying the API key is missing and how to send it; a wrong key still says invalid", async () => {
    const missing = await fetch(`${harness.baseUrl}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(hello),
    });
    expect(missing.status).toBe(401);
    expect(await missing.json()).toMatchObject({
      status: 110,
      message: expect.stringMatching(/^Missing API key: send the header Authorization: Bearer svc_/),
    });
    const wrong = await fetch(`${harness.baseUrl}/models`, {
      headers: { authorization: "Bearer svc_nope12345" },
    });
    expect(await wrong.json()).toMatchObject({ status: 110, message: "Invalid API key" });
  });
});

describe("the console's session route", () => {
  it("still serves GET /llm/models to a session", async () => {
    const session = await harness.session("newcomer");
    const models = await fetch(`${harness.url}/llm/models`, {
      headers: { authorization: `Bearer ${session}` },
    });
    expect(models.status).toBe(200);
  });
});
