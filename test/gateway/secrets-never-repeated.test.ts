import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { capturedLog } from "../support/captured-log";
import { type GatewayHarness, startGatewayHarness, testSecrets } from "../support/gateway-harness";

/**
 * A credential sent where none goes — an API key, a session token or the admin token as the model, in the
 * path, in the query string, in a Basic or malformed Authorization header, in the body — is never repeated:
 * not in the error body, not in the access log, not in the activity log other members of an organization
 * read. What the gateway says of such text is that it is hidden, and the requests are answered as before.
 */

let harness: GatewayHarness;
const log = capturedLog<Record<string, unknown>>();
let session: string;
let key: string;

beforeAll(async () => {
  harness = await startGatewayHarness({
    label: "secrets_never_repeated",
    billing: {},
    service: { adminToken: testSecrets.adminToken, logger: log.logger },
  });
  session = await harness.session("secret-sender");
  key = (await harness.issueKey(session)).key;
  await harness.topUp({ kind: "user", id: "secret-sender" }, "1000");
}, 60_000);

afterAll(async () => {
  await harness?.close();
});

beforeEach(() => {
  log.lines.length = 0;
});

async function send(
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: unknown,
): Promise<{ status: number; text: string }> {
  const response = await fetch(`${harness.url}${path}`, {
    method,
    headers: { ...(body === undefined ? {} : { "content-type": "application/json" }), ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, text: await response.text() };
}

function chatWith(model: string, extra: Record<string, unknown> = {}) {
  return { model, max_tokens: 5, messages: [{ role: "user", content: "hi" }], ...extra };
}

/** The secrets the test sends, and the random part of the key alone. */
function secretsSent(): string[] {
  return [key, key.slice("svc_".length), session, testSecrets.adminToken];
}

function repeatedIn(text: string): string[] {
  return secretsSent().filter((secret) => text.includes(secret));
}

async function until<T>(read: () => Promise<T | undefined>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error("not seen in time");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe("a credential sent where none goes", () => {
  it.each([
    ["the API key as the model", () => chatWith(key)],
    ["the session token as the model", () => chatWith(session)],
    ["the admin token as the model", () => chatWith(testSecrets.adminToken)],
  ])(
    "given %s, then the refusal, the access log and the activity log keep it hidden",
    async (_what, body) => {
      const reply = await send(
        "POST",
        "/llm/v1/chat/completions",
        { authorization: `Bearer ${key}` },
        body(),
      );

      expect(reply.status).toBe(404);
      expect(JSON.parse(reply.text)).toMatchObject({
        status: 120,
        message: expect.stringContaining("[redacted]"),
      });
      expect(repeatedIn(reply.text)).toEqual([]);
      const requestId = await until(async () => {
        const line = log.lines.find((entry) => entry.msg === "request" && entry.status === 404);
        return line?.requestId as string | undefined;
      });
      const activity = await until(async () => {
        const page = await send("GET", `/llm/usage/activity?requestId=${requestId}`, {
          authorization: `Bearer ${session}`,
        });
        return (JSON.parse(page.text) as { data: unknown[] }).data.length > 0 ? page.text : undefined;
      });
      expect(repeatedIn(activity)).toEqual([]);
      expect(repeatedIn(JSON.stringify(log.lines))).toEqual([]);
      log.lines.length = 0;
    },
  );

  it.each([
    [
      "in a session route's path",
      "GET",
      () => `/llm/apis/${key}`,
      () => ({ authorization: `Bearer ${session}` }),
    ],
    ["in a wrong base URL's path", "GET", () => `/v1/${key}`, () => ({})],
    ["in an admin route's path", "GET", () => `/admin/accounts/user/${key}`, () => ({})],
    ["in the query string", "POST", () => `/llm/v1/chat/completions?key=${key}`, () => ({})],
    ["in a session route's query string", "GET", () => `/llm/balance?key=${key}`, () => ({})],
    ["as Basic credentials", "POST", () => "/llm/v1/chat/completions", () => basic(key)],
    [
      "with text after it",
      "POST",
      () => "/llm/v1/chat/completions",
      () => ({ authorization: `Bearer ${key}x` }),
    ],
    [
      "beside another word",
      "POST",
      () => "/llm/v1/chat/completions",
      () => ({ authorization: `Bearer ${key} x` }),
    ],
    ["as the admin token, Basic", "GET", () => "/admin/fx-rates", () => basic(testSecrets.adminToken)],
    ["as a session, Basic", "GET", () => "/llm/balance", () => basic(session)],
  ])(
    "given the key %s, then neither the refusal nor the log repeats it",
    async (_where, method, path, headers) => {
      const reply = await send(
        method,
        path(),
        headers(),
        method === "POST" ? chatWith("alpha-5.4") : undefined,
      );

      expect(reply.status).toBeGreaterThanOrEqual(400);
      expect(repeatedIn(reply.text)).toEqual([]);
      await until(async () => (log.lines.some((line) => line.msg === "request") ? true : undefined));
      expect(repeatedIn(JSON.stringify(log.lines))).toEqual([]);
      log.lines.length = 0;
    },
  );

  it("given the key in the body, then the refusal names the field, never the value", async () => {
    const reply = await send("POST", "/llm/v1/chat/completions", {}, chatWith("alpha-5.4", { api_key: key }));

    expect(reply.status).toBe(401);
    expect(repeatedIn(reply.text)).toEqual([]);
    await until(async () => (log.lines.some((line) => line.msg === "request") ? true : undefined));
    expect(repeatedIn(JSON.stringify(log.lines))).toEqual([]);
  });

  it("given a model that only looks long, then it is named as sent", async () => {
    const model = "alpha-5.4-preview-2026-11-30";

    const reply = await send(
      "POST",
      "/llm/v1/chat/completions",
      { authorization: `Bearer ${key}` },
      chatWith(model),
    );

    expect(reply.status).toBe(404);
    expect(reply.text).toContain(`'${model}'`);
  });
});

function basic(secret: string): Record<string, string> {
  return { authorization: `Basic ${Buffer.from(`user:${secret}`).toString("base64")}` };
}
