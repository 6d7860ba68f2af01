import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiErrors } from "../../src/gateway/api-error";
import { type GatewayHarness, startGatewayHarness, testSecrets } from "../support/gateway-harness";

/**
 * The mistakes a newcomer makes first each get an answer that says what to do: a base URL of `…/v1`, the
 * bare host, `…/llm` or `…/LLM/v1` (a 404 naming `/llm/v1`), `curl -d` without a Content-Type (send
 * `Content-Type: application/json`), no Authorization header ("Missing API key", still 401/110), a key that is
 * wrong, sent without `Bearer `, the admin token or another provider's `sk-…` key (each said, still 401/110),
 * an unknown model (pointing at GET /llm/v1/models), too little credit (how much, and how to top up, still
 * 400/401 and 400/400), a GET on a generation endpoint (405, `Allow: POST`), an OpenAI route not served here
 * (404/120 naming what is), an empty responses `input`, and an API key sent to an account route, which takes a
 * session (still 401/110).
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
    ["…/LLM/v1", "/LLM/v1"],
    ["…/llm/V1", "/llm/V1"],
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
    expect(await wrong.json()).toMatchObject({
      status: 110,
      message: expect.stringMatching(/^Invalid API key: no active key matches it/),
    });
  });
});

/** The error an official client's call ends in (undefined if it succeeded). */
async function failureOf(call: () => Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> {
  const failure = await call().then(
    () => undefined,
    (error: unknown) => error,
  );
  expect(failure).toBeInstanceOf(OpenAI.APIError);
  return failure as InstanceType<typeof OpenAI.APIError>;
}

describe("a credential that is no API key", () => {
  it.each([
    [
      "an unknown svc_ key",
      `svc_${"Z".repeat(43)}`,
      /no active key matches it \(mistyped, deactivated or deleted\)/,
    ],
    ["the admin token", testSecrets.adminToken, /this is the admin token, which opens only \/admin/],
    ["another provider's sk- key", `sk-proj-${"a".repeat(40)}`, /sk-… is another provider's key format/],
    ["a token without the svc_ prefix", "abcdef0123456789", /API keys start with svc_/],
  ])(
    "given %s in the official client, then 401/110 says which, and where keys come from",
    async (_name, apiKey, says) => {
      const client = new OpenAI({ apiKey, baseURL: harness.baseUrl, maxRetries: 0 });

      const error = await failureOf(() => client.chat.completions.create(hello));

      expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
      expect(error.status).toBe(401);
      expect(error.error).toMatchObject({ code: 110, type: "authentication_error" });
      expect(error.message).toMatch(/Invalid API key: /);
      expect(error.message).toMatch(says);
      expect(error.message).toContain("POST /llm/apis");
    },
  );

  it("given the key without Bearer (or another scheme), then 401/110 says how the header reads", async () => {
    for (const [authorization, says] of [
      [key, 'the key was sent without "Bearer "'],
      [`Basic ${key}`, "must read Bearer svc_…"],
    ] as const) {
      const answer = await fetch(`${harness.baseUrl}/chat/completions`, {
        method: "POST",
        headers: { authorization, "content-type": "application/json" },
        body: JSON.stringify(hello),
      });
      expect(answer.status).toBe(401);
      const body = (await answer.json()) as { status: number; message: string };
      expect(body.status).toBe(110);
      expect(body.message).toContain(says);
    }
  });
});

describe("an API key on an account route", () => {
  it("given the demo key on GET /llm/usage/activity, then 401/110 says it is an API key and the route takes a session token", async () => {
    const answer = await fetch(`${harness.url}/llm/usage/activity`, {
      headers: { authorization: `Bearer ${key}` },
    });

    expect(answer.status).toBe(401);
    const body = (await answer.json()) as { status: number; message: string };
    expect(body.status).toBe(110);
    expect(body.message).toMatch(/^A logged-in session is required: this is an API key \(svc_…\)/);
    expect(body.message).toContain("POST /admin/sessions");
  });

  it("given no credential or a token that is no session, then 401/110 says which header to send and where a session token comes from", async () => {
    for (const headers of [{}, { authorization: "Bearer not-a-session" }] as Record<string, string>[]) {
      const answer = await fetch(`${harness.url}/llm/usage/activity`, { headers });
      expect(answer.status).toBe(401);
      const body = (await answer.json()) as { status: number; message: string };
      expect(body.status).toBe(110);
      expect(body.message).toMatch(
        /^A logged-in session is required: send the header Authorization: Bearer /,
      );
      expect(body.message).toContain("POST /admin/sessions");
      expect(body.message).toContain("expired");
    }
  });
});

describe("an Authorization header of 100 KB", () => {
  it("is 431 (headers too large) with the error body, through the official client too", async () => {
    const huge = `svc_${"k".repeat(100 * 1024)}`;
    const client = new OpenAI({ apiKey: huge, baseURL: harness.baseUrl, maxRetries: 0 });

    const error = await failureOf(() => client.chat.completions.create(hello));

    expect(error.status).toBe(431);
    expect(error.error).toMatchObject({ code: 100 });
    expect(error.message).toContain("Request headers are too large");
    const answer = await fetch(`${harness.baseUrl}/models`, { headers: { authorization: `Bearer ${huge}` } });
    expect(answer.status).toBe(431);
    expect(answer.headers.get("x-request-id")).toMatch(/^req_[0-9a-f]{32}$/);
    expect(await answer.json()).toMatchObject({ status: 100, message: expect.stringContaining("16 KB") });
  });
});

describe("an unknown model", () => {
  it("is 404/120 pointing at GET /llm/v1/models, on both endpoints and on retrieve", async () => {
    const client = harness.openai(key);
    for (const call of [
      () => client.chat.completions.create({ ...hello, model: "omega-1" }),
      () => client.responses.create({ model: "omega-1", input: "Hello" }),
      () => client.models.retrieve("omega-1"),
    ]) {
      const error = await failureOf(call);
      expect(error).toBeInstanceOf(OpenAI.NotFoundError);
      expect(error.error).toMatchObject({ code: 120 });
      expect(error.message).toContain(
        "The model 'omega-1' does not exist; GET /llm/v1/models lists the models",
      );
    }
  });
});

describe("too little credit", () => {
  it("given ₩0.5 on a personal account, then 400/401 says what is available and how to top up, naming no id", async () => {
    const session = await harness.session("short-of-credit");
    const { key: shortKey } = await harness.issueKey(session);
    await harness.topUp({ kind: "user", id: "short-of-credit" }, "0.5");

    const error = await failureOf(() => harness.openai(shortKey).chat.completions.create(hello));

    expect(error.status).toBe(400);
    expect(error.error).toMatchObject({ code: 401 });
    expect(error.message).toMatch(/^400 User credit is insufficient: your account has ₩0\.5 available/);
    expect(error.message).toContain("a request needs at least ₩1");
    expect(error.message).toContain("POST /admin/accounts/user/{id}/credits");
    expect(error.message).not.toContain("short-of-credit");
  });

  it("given an empty organization, then 400/400 says the organization has ₩0 available", async () => {
    const session = await harness.session("member-of-empty", "empty-organization");
    const { key: organizationKey } = await harness.issueKey(session, { isOrganization: true });

    const error = await failureOf(() => harness.openai(organizationKey).chat.completions.create(hello));

    expect(error.status).toBe(400);
    expect(error.error).toMatchObject({ code: 400 });
    expect(error.message).toMatch(/Organization credit is insufficient: the organization has ₩0 available/);
    expect(error.message).toContain("POST /admin/accounts/organization/{id}/credits");
    expect(error.message).not.toContain("empty-organization");
  });

  it.each([
    ["0.933000", "₩0.933"],
    ["1234567.500", "₩1,234,567.5"],
    ["-23.969500", "-₩23.9695"],
    ["0.000000", "₩0"],
  ])("given %s won available as NUMERIC answers it, then the refusal says %s", (availableWon, said) => {
    expect(apiErrors.creditInsufficient("user", availableWon).message).toContain(`has ${said} available`);
  });
});

describe("a GET on a generation endpoint", () => {
  it.each(["/chat/completions", "/responses"])(
    "given GET %s (a browser, a bare curl), then 405 with Allow: POST and the error body",
    async (path) => {
      for (const method of ["GET", "PUT"]) {
        const answer = await fetch(`${harness.baseUrl}${path}`, {
          method,
          headers: { authorization: `Bearer ${key}` },
        });
        expect(answer.status).toBe(405);
        expect(answer.headers.get("allow")).toBe("POST");
        expect(answer.headers.get("x-request-id")).toMatch(/^req_[0-9a-f]{32}$/);
        expect(await answer.json()).toMatchObject({
          status: 100,
          message: `${method} is not served at /llm/v1${path}: use POST`,
        });
      }
    },
  );

  it("given POST /models, then 405 with Allow: GET, HEAD; an unknown path stays 404/120", async () => {
    const models = await fetch(`${harness.baseUrl}/models`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}` },
    });
    expect(models.status).toBe(405);
    expect(models.headers.get("allow")).toBe("GET, HEAD");
    const unknown = await fetch(`${harness.baseUrl}/embeddings`, {
      headers: { authorization: `Bearer ${key}` },
    });
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ status: 120 });
  });
});

describe("an OpenAI route the gateway does not serve", () => {
  const served =
    "this gateway serves POST /llm/v1/chat/completions, POST /llm/v1/responses and GET /llm/v1/models";

  it("given the official client's responses.retrieve, delete and cancel, then 404/120 says no responses are kept", async () => {
    const client = new OpenAI({ apiKey: key, baseURL: harness.baseUrl, maxRetries: 0 });
    for (const call of [
      () => client.responses.retrieve("resp-1796000000000"),
      () => client.responses.delete("resp-1796000000000"),
      () => client.responses.cancel("resp-1796000000000"),
    ]) {
      const error = await call().then(
        () => undefined,
        (failure: unknown) => failure,
      );
      expect(error).toBeInstanceOf(OpenAI.NotFoundError);
      const notFound = error as InstanceType<typeof OpenAI.NotFoundError>;
      expect(notFound.error).toMatchObject({ code: 120 });
      expect(notFound.message).toContain(`This gateway keeps no responses, so none can be retrieved`);
      expect(notFound.message).toContain(served);
    }
  });

  it("given chat.completions.retrieve and embeddings.create, then 404/120 says what is served", async () => {
    const client = new OpenAI({ apiKey: key, baseURL: harness.baseUrl, maxRetries: 0 });
    const stored = await client.chat.completions.retrieve("chatcmpl-1796000000000").then(
      () => undefined,
      (failure: unknown) => failure as InstanceType<typeof OpenAI.NotFoundError>,
    );
    expect(stored?.message).toContain("This gateway stores no chat completions");
    const embeddings = await client.embeddings.create({ model: "alpha-5.4-mini", input: "Hello" }).then(
      () => undefined,
      (failure: unknown) => failure as InstanceType<typeof OpenAI.NotFoundError>,
    );
    expect(embeddings).toBeInstanceOf(OpenAI.NotFoundError);
    expect(embeddings?.message).toContain(`No such route: /llm/v1/embeddings; ${served}`);
  });
});

describe("an empty responses input", () => {
  it.each([
    ["an empty string", ""],
    ["an empty array", []],
  ])("given %s, then 400/100 names input, as chat's empty messages is refused", async (_name, input) => {
    const client = harness.openai(key);

    const responses = await failureOf(() =>
      client.responses.create({ model: "alpha-5.4-mini", input: input as string }),
    );
    const chat = await failureOf(() =>
      client.chat.completions.create({ model: "alpha-5.4-mini", messages: [] }),
    );

    for (const error of [responses, chat]) {
      expect(error).toBeInstanceOf(OpenAI.BadRequestError);
      expect(error.error).toMatchObject({ code: 100 });
    }
    expect(responses.message).toMatch(/^400 input: /);
    expect(chat.message).toMatch(/^400 messages: /);
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
