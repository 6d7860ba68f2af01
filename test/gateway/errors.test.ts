import { once } from "node:events";
import { connect } from "node:net";
import fc from "fast-check";
import pg from "pg";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type GatewayHarness, startGatewayHarness } from "../support/gateway-harness";

/** Every row of contract C3, the ₩1 threshold for both key kinds, and a fuzz of both endpoints. */

interface Reply {
  status: number;
  body: Record<string, unknown>;
  requestId: string | null;
}

async function post(
  harness: GatewayHarness,
  path: string,
  options: { key?: string; body?: string; headers?: Record<string, string> },
): Promise<Reply> {
  const response = await fetch(`${harness.baseUrl}${path}`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      ...(options.key ? { authorization: `Bearer ${options.key}` } : {}),
      ...options.headers,
    },
    body: options.body ?? "{}",
  });
  const text = await response.text();
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(text) as Record<string, unknown>;
  } catch {
    body = { raw: text };
  }
  return { status: response.status, body, requestId: response.headers.get("x-request-id") };
}

const chat = (model = "alpha-5.4-mini", extra: Record<string, unknown> = {}) =>
  JSON.stringify({ model, messages: [{ role: "user", content: "Hi" }], ...extra });

function expectError(reply: Reply, httpStatus: number, code: number): void {
  expect({ status: reply.status, code: reply.body.status }).toEqual({ status: httpStatus, code });
  expect(reply.body.message).toEqual(expect.any(String));
  expect(reply.body.error).toMatchObject({ code, message: reply.body.message });
  expect(reply.requestId).toMatch(/^req_[0-9a-f]{32}$/);
  expect(JSON.stringify(reply.body)).not.toMatch(/at .*\.ts:\d+|svc_[A-Za-z0-9_-]{20}|upstream-secret/);
}

describe("errors (C3)", () => {
  let harness: GatewayHarness;
  let personal: string;

  beforeAll(async () => {
    harness = await startGatewayHarness({
      label: "errors",
      service: {
        upstreamTimeouts: { headersTimeoutMs: 500, bodyTimeoutMs: 500, connectTimeoutMs: 500 },
      },
    });
    const alice = await harness.session("alice", "acme");
    personal = (await harness.issueKey(alice)).key;
    await harness.topUp({ kind: "user", id: "alice" }, "1000");
    await harness.topUp({ kind: "organization", id: "acme" }, "1000");
  });
  afterAll(async () => {
    await harness?.close();
  });
  beforeEach(() => harness.simulator.setFault(undefined));

  it.each([
    ["body that is not JSON", 400, 100, "{not json"],
    ["missing model", 400, 100, JSON.stringify({ messages: [{ role: "user", content: "Hi" }] })],
    ["missing messages", 400, 100, JSON.stringify({ model: "alpha-5.4-mini" })],
    ["temperature above 2", 400, 100, chat("alpha-5.4-mini", { temperature: 2.01 })],
    ["top_p below 0", 400, 100, chat("alpha-5.4-mini", { top_p: -0.1 })],
    ["max_tokens not a number", 400, 100, chat("alpha-5.4-mini", { max_tokens: "many" })],
    [
      "max_tokens more than a request is priced for",
      400,
      100,
      chat("alpha-5.4-mini", { max_tokens: Number.MAX_SAFE_INTEGER }),
    ],
    ["stream not a boolean", 400, 100, chat("alpha-5.4-mini", { stream: "yes" })],
    [
      "unknown role",
      400,
      100,
      JSON.stringify({ model: "alpha-5.4-mini", messages: [{ role: "robot", content: "Hi" }] }),
    ],
    ["unknown model", 404, 120, chat("omega-1")],
  ])("%s → %d/%d", async (_label, httpStatus, code, body) => {
    expectError(await post(harness, "/chat/completions", { key: personal, body }), httpStatus, code);
  });

  it("refuses a body over the size limit with 400/100", async () => {
    const huge = chat("alpha-5.4-mini", { padding: "x".repeat(1024 * 1024 + 1) });
    expectError(await post(harness, "/chat/completions", { key: personal, body: huge }), 400, 100);
  });

  it.each([
    ["a malformed header", "Basic abc"],
    ["an unknown key", `svc_${"A".repeat(43)}`],
    ["a key without the prefix", "sk-1234567890"],
  ])("refuses %s with 401/110 and the invalid-key message", async (_label, header) => {
    const reply = await post(harness, "/chat/completions", {
      body: chat(),
      ...(header ? { headers: { authorization: header } } : {}),
    });
    expectError(reply, 401, 110);
    expect(reply.body.message).toMatch(/^Invalid API key: /);
  });

  it.each([
    ["no key", undefined],
    ["an unknown key", `svc_${"A".repeat(43)}`],
  ])(
    "refuses %s with 401/110 even when the body is bad too: not JSON, another type, too large",
    async (_label, key) => {
      const bad = [
        { body: "{not json" },
        { body: chat(), headers: { "content-type": "text/plain" } },
        { body: chat("alpha-5.4-mini", { padding: "x".repeat(1024 * 1024 + 1) }) },
      ];
      for (const request of bad) {
        const reply = await post(harness, "/responses", { ...request, ...(key ? { key } : {}) });
        expectError(reply, 401, 110);
      }
    },
  );

  it("answers a request without a valid key 401/110 before its body has arrived, reading none of it", async () => {
    // A 512 KiB body declared (within the limit) and 1 KiB of it sent, then nothing: a client holding the
    // gateway's memory with bodies it never finishes needs a key to make the gateway read them at all.
    const url = new URL(`${harness.baseUrl}/chat/completions`);
    const socket = connect(Number(url.port), url.hostname);
    await once(socket, "connect");
    socket.write(
      `POST ${url.pathname} HTTP/1.1\r\nHost: ${url.host}\r\ncontent-type: application/json\r\n` +
        `content-length: ${512 * 1024}\r\n\r\n${"x".repeat(1024)}`,
    );
    let answer = "";
    socket.on("data", (chunk) => {
      answer += String(chunk);
    });
    const answered = await Promise.race([
      new Promise<boolean>((resolve) =>
        socket.on("data", () => answer.includes("\r\n\r\n") && resolve(true)),
      ),
      new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 5_000)),
    ]);
    socket.destroy();
    expect(answered).toBe(true);
    expect(answer).toMatch(/^HTTP\/1\.1 401 /);
  });

  it("answers an unknown route under /llm/v1 with 404/120, a method it does not serve with 405/100, and a body of another type as invalid", async () => {
    expectError(await post(harness, "/embeddings", { key: personal, body: chat() }), 404, 120);
    const wrongMethod = await fetch(`${harness.baseUrl}/chat/completions`, {
      headers: { authorization: `Bearer ${personal}` },
    });
    expectError(
      {
        status: wrongMethod.status,
        body: (await wrongMethod.json()) as Record<string, unknown>,
        requestId: wrongMethod.headers.get("x-request-id"),
      },
      405,
      100,
    );
    const notJson = await post(harness, "/chat/completions", {
      key: personal,
      body: chat(),
      headers: { "content-type": "text/plain" },
    });
    expectError(notJson, 400, 100);
  });

  it("serves the endpoints with a trailing slash or a query string, as express did", async () => {
    expect((await post(harness, "/chat/completions/", { key: personal, body: chat() })).status).toBe(200);
    expect((await post(harness, "/chat/completions?trace=1", { key: personal, body: chat() })).status).toBe(
      200,
    );
  });

  it("refuses inactive and deleted keys with 401/110", async () => {
    const bob = await harness.session("bob");
    await harness.topUp({ kind: "user", id: "bob" }, "10");
    for (const change of ["deactivate", "delete"] as const) {
      const issued = await harness.issueKey(bob);
      const path = change === "deactivate" ? `/llm/apis/${issued.uuid}/status` : `/llm/apis/${issued.uuid}`;
      await fetch(`${harness.url}${path}`, {
        method: change === "deactivate" ? "PATCH" : "DELETE",
        headers: { authorization: `Bearer ${bob}`, "content-type": "application/json" },
        ...(change === "deactivate" ? { body: JSON.stringify({ status: 0 }) } : {}),
      });
      expectError(await post(harness, "/chat/completions", { key: issued.key, body: chat() }), 401, 110);
    }
  });

  it("maps an upstream 4xx to 400/300 and a 5xx, a timeout or a malformed reply to 500/300", async () => {
    harness.simulator.setFault({ kind: "status", status: 422, message: "context too long for this model" });
    const rejected = await post(harness, "/chat/completions", { key: personal, body: chat() });
    expectError(rejected, 400, 300);
    expect(rejected.body.message).toContain("context too long");

    for (const fault of [
      { kind: "status", status: 503 },
      { kind: "hang" },
      { kind: "malformed-json" },
    ] as const) {
      harness.simulator.setFault(fault);
      // At once: each makes its default 8 attempts with backoff (a hang's each cut at 500 ms), about 7 s,
      // at upstreams of two providers, whose breakers count apart.
      const [chatAnswer, responsesAnswer] = await Promise.all([
        post(harness, "/chat/completions", { key: personal, body: chat("delta-4.5-haiku") }),
        post(harness, "/responses", {
          key: personal,
          body: JSON.stringify({ model: "beta-3-flash", input: "Hi" }),
        }),
      ]);
      expectError(chatAnswer, 500, 300);
      expectError(responsesAnswer, 500, 300);
    }
  }, 120_000);

  it("blocks a personal key below ₩1 with 400/401 and an organization key with 400/400; exactly ₩1 passes", async () => {
    const carol = await harness.session("carol", "initech");
    const personalKey = (await harness.issueKey(carol)).key;
    const organizationKey = (await harness.issueKey(carol, { isOrganization: true })).key;

    expectError(await post(harness, "/chat/completions", { key: personalKey, body: chat() }), 400, 401);
    expectError(await post(harness, "/chat/completions", { key: organizationKey, body: chat() }), 400, 400);

    await harness.topUp({ kind: "user", id: "carol" }, "0.5");
    await harness.topUp({ kind: "organization", id: "initech" }, "0.5");
    expectError(await post(harness, "/chat/completions", { key: personalKey, body: chat() }), 400, 401);
    expectError(await post(harness, "/chat/completions", { key: organizationKey, body: chat() }), 400, 400);

    await harness.topUp({ kind: "user", id: "carol" }, "0.5");
    await harness.topUp({ kind: "organization", id: "initech" }, "0.5");
    expect((await post(harness, "/chat/completions", { key: personalKey, body: chat() })).status).toBe(200);
    expect((await post(harness, "/chat/completions", { key: organizationKey, body: chat() })).status).toBe(
      200,
    );
  });

  it("never answers a random body with a 5xx, always with the error body", async () => {
    const jsonValue = fc.jsonValue({ maxDepth: 3 });
    const plausible = fc.record(
      {
        model: fc.oneof(fc.constantFrom("alpha-5.4-mini", "delta-4.7-opus", "nope"), jsonValue),
        messages: fc.oneof(
          fc.array(
            fc.record({
              role: fc.oneof(fc.constantFrom("user", "system", "assistant"), jsonValue),
              content: jsonValue,
            }),
            { maxLength: 3 },
          ),
          jsonValue,
        ),
        input: jsonValue,
        temperature: fc.oneof(fc.double(), jsonValue),
        top_p: fc.oneof(fc.double(), jsonValue),
        max_tokens: fc.oneof(fc.integer({ min: -5, max: 60 }), jsonValue),
        max_output_tokens: fc.oneof(fc.integer({ min: -5, max: 60 }), jsonValue),
        stream: fc.oneof(fc.boolean(), jsonValue),
      },
      { requiredKeys: [] },
    );
    const body = fc.oneof(
      plausible.map((value) => JSON.stringify(value)),
      jsonValue.map((value) => JSON.stringify(value)),
      fc.string({ maxLength: 200 }),
    );
    await fc.assert(
      fc.asyncProperty(fc.constantFrom("/chat/completions", "/responses"), body, async (path, text) => {
        const reply = await post(harness, path, { key: personal, body: text });
        expect(reply.status).toBeLessThan(500);
        if (reply.status !== 200) {
          expect(reply.body).toMatchObject({ status: expect.any(Number), message: expect.any(String) });
        }
      }),
      { numRuns: 2_000, seed: 20261122 },
    );
  }, 180_000);

  it("fails closed with 503/300 when the ledger's database is unavailable", async () => {
    const isolated = await startGatewayHarness({ label: "dbdown" });
    try {
      const dave = await isolated.session("dave");
      const key = (await isolated.issueKey(dave)).key;
      await isolated.topUp({ kind: "user", id: "dave" }, "100");
      const serverUrl = isolated.database.url.replace(/\/[^/]+$/, "/postgres");
      const admin = new pg.Client({ connectionString: serverUrl });
      await admin.connect();
      await admin.query(`ALTER DATABASE ${isolated.database.name} WITH ALLOW_CONNECTIONS false`);
      await admin.query(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
        [isolated.database.name],
      );
      const before = isolated.simulator.receivedRequestCount();

      const reply = await post(isolated, "/chat/completions", { key, body: chat() });
      expectError(reply, 503, 300);
      expect(isolated.simulator.receivedRequestCount()).toBe(before);

      await admin.query(`ALTER DATABASE ${isolated.database.name} WITH ALLOW_CONNECTIONS true`);
      await admin.end();
    } finally {
      await isolated.close();
    }
  }, 60_000);
});
