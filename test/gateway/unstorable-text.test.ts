import { SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { firstUnstorableTextPath, isStorableText } from "../../src/kernel/storable-text";
import { type GatewayHarness, startGatewayHarness, testSecrets } from "../support/gateway-harness";

/**
 * Strings PostgreSQL cannot store — a NUL (U+0000), a surrogate without its pair — sent through every door
 * that leads to the database: each is 400/100 naming the field, never a 500 from the query it would break,
 * and never stored as something else. Message text of a generation request is sent upstream, not stored,
 * and stays legitimate.
 */

const unstorable = {
  NUL: "team\u0000a",
  "a lone high surrogate": "team\uD800a",
  "a lone low surrogate": "team\uDC00a",
  "a reversed pair": "team\uDC00\uD800",
} as const;
const cases = Object.entries(unstorable);

interface Reply {
  status: number;
  body: { status?: unknown; message?: unknown; [field: string]: unknown };
}

let harness: GatewayHarness;
let alice: string;
let aliceKey: string;

beforeAll(async () => {
  harness = await startGatewayHarness({
    label: "unstorable_text",
    billing: {},
    service: { adminToken: testSecrets.adminToken },
  });
  alice = await harness.session("alice", "acme");
  aliceKey = (await harness.issueKey(alice)).key;
  await harness.topUp({ kind: "user", id: "alice" }, "1000");
}, 60_000);
afterAll(async () => {
  await harness?.close();
});

async function call(
  method: string,
  path: string,
  options: { body?: unknown; bearer?: string; rawBody?: string } = {},
): Promise<Reply> {
  const response = await fetch(`${harness.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${options.bearer ?? testSecrets.adminToken}`,
      "content-type": "application/json",
    },
    ...(options.rawBody !== undefined
      ? { body: options.rawBody }
      : options.body === undefined
        ? {}
        : { body: JSON.stringify(options.body) }),
  });
  const text = await response.text();
  return { status: response.status, body: JSON.parse(text) as Reply["body"] };
}

function expectRefused(reply: Reply, field: string): void {
  expect({ status: reply.status, code: reply.body.status }).toEqual({ status: 400, code: 100 });
  expect(reply.body.message).toEqual(expect.stringMatching(new RegExp(`^${field}: `)));
}

/** A session token as the platform that logs users in would mint it, whatever its claims. */
async function platformToken(claims: { sub: string; org?: string }): Promise<string> {
  return new SignJWT(claims.org === undefined ? {} : { org: claims.org })
    .setProtectedHeader({ alg: "HS256" })
    .setSubject(claims.sub)
    .setIssuedAt()
    .setExpirationTime("1h")
    .sign(new TextEncoder().encode(testSecrets.sessionSecret));
}

const base64urlJson = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");

describe("given text PostgreSQL cannot store", () => {
  it("then the check finds NUL and unpaired surrogates, in values and in keys, and passes paired ones", () => {
    expect(isStorableText("한국어 😀 text")).toBe(true);
    for (const text of Object.values(unstorable)) expect(isStorableText(text)).toBe(false);
    expect(firstUnstorableTextPath({ a: [1, "ok", { b: "x\u0000" }] })).toEqual(["a", 2, "b"]);
    expect(firstUnstorableTextPath({ ok: true, "k\uD800": 1 })).toEqual(["k\uD800"]);
    expect(firstUnstorableTextPath({ a: ["😀"], b: null })).toBeUndefined();
    let deep: unknown = "\u0000";
    for (let level = 0; level < 100_000; level += 1) deep = [deep];
    expect(firstUnstorableTextPath(deep)).toHaveLength(100_000);
  });

  describe.each(cases)("holding %s", (_label, text) => {
    it("when it names or describes a key, then 400/100 names the field", async () => {
      expectRefused(await call("POST", "/llm/apis", { bearer: alice, body: { name: text } }), "name");
      expectRefused(
        await call("POST", "/llm/apis", { bearer: alice, body: { name: "ok", description: text } }),
        "description",
      );
    });

    it("when it is a session's user or organization id, then no session is minted", async () => {
      expectRefused(await call("POST", "/admin/sessions", { body: { userId: text } }), "userId");
      expectRefused(
        await call("POST", "/admin/sessions", { body: { userId: "bob", organizationId: text } }),
        "organizationId",
      );
    });

    it("when the service is asked to mint a session for it, then that is a programmer error", async () => {
      await expect(
        harness.service.sessions.mint({ userId: text, organizationId: null }, 60),
      ).rejects.toThrow();
      await expect(
        harness.service.sessions.mint({ userId: "bob", organizationId: text }, 60),
      ).rejects.toThrow();
    });

    it("when a platform's session token carries it, then the session is refused as invalid (401/110)", async () => {
      for (const claims of [{ sub: text }, { sub: "bob", org: text }]) {
        const token = await platformToken(claims);
        for (const [method, path, body] of [
          ["GET", "/llm/apis", undefined],
          ["POST", "/llm/apis", { name: "k" }],
          ["GET", "/llm/balance", undefined],
          ["GET", "/llm/usage", undefined],
        ] as const) {
          const reply = await call(method, path, { bearer: token, ...(body ? { body } : {}) });
          expect({ status: reply.status, code: reply.body.status }).toEqual({ status: 401, code: 110 });
        }
        const exchanged = await call("POST", "/console/api/session", { body: { token } });
        expect(exchanged.status).toBe(401);
      }
    });

    it("when it is an admin write's field, then 400/100 names it and nothing is recorded", async () => {
      // Usage of earlier requests may still be recorded and charged meanwhile: only admin writes count here.
      const adminWrites = async () =>
        ((await call("GET", "/admin/events?limit=1000")).body.data as { type: string }[]).filter(
          (event) => !event.type.startsWith("Usage"),
        );
      const eventsBefore = await adminWrites();
      expectRefused(
        await call("POST", "/admin/accounts/user/alice/credits", {
          body: { amountWon: "1", reference: text },
        }),
        "reference",
      );
      expectRefused(
        await call("PUT", "/admin/discounts", { body: { model: null, organizationId: text, rate: "0.1" } }),
        "organizationId",
      );
      expectRefused(
        await call("PUT", "/admin/discounts", { body: { model: text, organizationId: null, rate: "0.1" } }),
        "model",
      );
      expectRefused(
        await call("PUT", "/admin/models/alpha-5.4/price", {
          body: { inputUsdPer1M: text, outputUsdPer1M: "1" },
        }),
        "inputUsdPer1M",
      );
      expectRefused(
        await call("POST", "/admin/fx-rates", {
          body: { appliesOn: "2026-11-20", rate: "1400", note: text },
        }),
        "note",
      );
      expectRefused(
        await call("POST", "/admin/sessions", { body: { userId: "bob", [`extra${text}`]: 1 } }),
        `extra${text}`,
      );
      expect(await adminWrites()).toEqual(eventsBefore);
    });

    it("when a JSON body nests it deep in an array, then 400/100 names its path", async () => {
      expectRefused(
        await call("POST", "/llm/apis", { bearer: alice, body: { name: "k", tags: [["a", text]] } }),
        "tags\\.0\\.1",
      );
    });

    it("when a console exchange carries it, then 400/100 names the field", async () => {
      expectRefused(await call("POST", "/console/api/session", { body: { token: text } }), "token");
      expectRefused(
        await call("POST", "/console/api/admin-session", { body: { adminToken: text } }),
        "adminToken",
      );
    });

    it("when an opaque cursor decodes to it, then 400/100 names the cursor", async () => {
      expectRefused(
        await call("GET", `/admin/accounts?cursor=${base64urlJson({ kind: "user", id: text })}`),
        "cursor",
      );
      const billingCursor = base64urlJson(["2026-11-20T00:00:00.000000Z", text]);
      expectRefused(
        await call("GET", `/llm/billing?limit=5&cursor=${billingCursor}`, { bearer: alice }),
        "cursor",
      );
      expectRefused(
        await call("GET", `/admin/billing?account=user:alice&limit=5&cursor=${billingCursor}`),
        "cursor",
      );
    });

    it("when a generation request's messages carry it, then it is sent upstream and answered 200", async () => {
      const client = harness.openai(aliceKey);
      const completion = await client.chat.completions.create({
        model: "alpha-5.4-mini",
        messages: [{ role: "user", content: `say ${text}` }],
      });
      expect(completion.id).toMatch(/^chatcmpl-\d+$/);
      const response = await client.responses.create({
        model: "delta-4.5-haiku",
        instructions: text,
        input: [{ role: "user", content: text }],
      });
      expect(response.status).toBe("completed");
    });

    it("when a generation request's user or metadata carry it, then no 5xx, and no event records it", async () => {
      for (const [path, body] of [
        ["/llm/v1/chat/completions", { model: "gamma-4-3", messages: [{ role: "user", content: "Hi" }] }],
        ["/llm/v1/responses", { model: "delta-4.5-haiku", input: "Hi" }],
      ] as const) {
        const reply = await call("POST", path, {
          bearer: aliceKey,
          body: { ...body, user: text, metadata: { [text]: text } },
        });
        expect(reply.status, JSON.stringify(reply.body)).toBeLessThan(500);
        if (reply.status !== 200)
          expect(reply.body).toMatchObject({ status: 100, message: expect.any(String) });
      }
      const events = await call("GET", "/admin/events?limit=1000");
      expect(JSON.stringify(events.body.data)).not.toContain(JSON.stringify(text).slice(1, -1));
    });

    it("when it is a generation request's model, then 404/120 and nothing is held", async () => {
      const reply = await call("POST", "/llm/v1/chat/completions", {
        bearer: aliceKey,
        body: { model: text, messages: [{ role: "user", content: "Hi" }] },
      });
      expect({ status: reply.status, code: reply.body.status }).toEqual({ status: 404, code: 120 });
    });
  });

  describe("in a path or a query, percent-encoded", () => {
    it.each([
      ["GET", "/admin/accounts/user/a%00b", "id"],
      ["GET", "/admin/accounts/user/a%00b/keys", "id"],
      ["POST", "/admin/accounts/organization/%00/credits", "id"],
      ["PUT", "/admin/models/alpha%00/price", "slug"],
      ["PATCH", "/llm/apis/%00/status", "uuid"],
      ["DELETE", "/llm/apis/a%00", "uuid"],
      ["GET", "/admin/billing?account=user:a%00b", "account"],
      ["GET", "/admin/billing/totals?account=organization:%00&groupBy=day", "account"],
      ["GET", "/admin/events?stream=account-user-%00", "stream"],
      ["GET", "/admin/accounts?search=%00", "search"],
      ["GET", "/llm/apis?isOrganization=%00", "isOrganization"],
      ["GET", "/llm/billing?from=%00", "from"],
      ["GET", "/llm/usage?from=2026-11-01&to=%00", "to"],
      ["GET", "/console/sign-in?code=%00", "code"],
      // A lone surrogate's only way into a URL is WTF-8, which is not UTF-8: refused, never read as U+FFFD.
      ["GET", "/admin/accounts?search=%ED%A0%80", "search"],
      ["GET", "/admin/events?limit=5&stream=a%ED%B0%80", "stream"],
      ["GET", "/llm/balance?x=%zz", "x"],
    ])("%s %s → 400/100 naming %s", async (method, path, field) => {
      const body = method === "POST" ? { amountWon: "1" } : method === "PATCH" ? { status: 0 } : undefined;
      const bearer = path.startsWith("/llm/") ? alice : testSecrets.adminToken;
      expectRefused(await call(method, path, { bearer, ...(body ? { body } : {}) }), field);
    });

    it("a path segment that is not UTF-8 once decoded is 400/100, in express and on /llm/v1", async () => {
      for (const [path, bearer] of [
        ["/admin/accounts/user/%ED%A0%80", testSecrets.adminToken],
        ["/llm/apis/%ED%A0%80", alice],
        ["/llm/v1/models/%ED%A0%80", aliceKey],
        ["/llm/v1/models/%E0%A4", aliceKey],
      ] as const) {
        const reply = await call(path.startsWith("/llm/apis") ? "DELETE" : "GET", path, { bearer });
        expect({ path, status: reply.status, code: reply.body.status }).toEqual({
          path,
          status: 400,
          code: 100,
        });
      }
      const unknownModel = await call("GET", "/llm/v1/models/alpha%00", { bearer: aliceKey });
      expect({ status: unknownModel.status, code: unknownModel.body.status }).toEqual({
        status: 404,
        code: 120,
      });
    });
  });

  it("a key issued with every storable character round-trips exactly", async () => {
    // Readable text only (test/gateway/keys/key-name-characters.test.ts): a description keeps tabs and line breaks.
    const name = "키 😀 \uFFFF";
    const description = "키 😀\r\n\t \uFFFF";
    const issued = await call("POST", "/llm/apis", { bearer: alice, body: { name, description } });
    expect(issued.status).toBe(201);
    const listed = await call("GET", "/llm/apis", { bearer: alice });
    expect(listed.body.data).toEqual(
      expect.arrayContaining([expect.objectContaining({ uuid: issued.body.uuid, name, description })]),
    );
  });
});
