import { createHash, createHmac } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GatewayHarness, startGatewayHarness, testSecrets } from "../support/gateway-harness";

async function call(
  harness: GatewayHarness,
  method: string,
  path: string,
  token: string | undefined,
  body?: unknown,
) {
  const response = await fetch(`${harness.url}${path}`, {
    method,
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return {
    status: response.status,
    body: (await response.json()) as Record<string, unknown>,
    headers: response.headers,
  };
}

async function modelsStatus(harness: GatewayHarness, apiKey: string): Promise<number> {
  const response = await fetch(`${harness.baseUrl}/models`, {
    headers: { authorization: `Bearer ${apiKey}` },
  });
  await response.arrayBuffer();
  return response.status;
}

describe("key management (/llm/apis)", () => {
  let harness: GatewayHarness;
  let alice: string;
  let bob: string;
  let carolOfAcme: string;
  let daveOfAcme: string;
  let eveOfGlobex: string;

  beforeAll(async () => {
    harness = await startGatewayHarness({ label: "keys" });
    alice = await harness.session("alice");
    bob = await harness.session("bob");
    carolOfAcme = await harness.session("carol", "acme");
    daveOfAcme = await harness.session("dave", "acme");
    eveOfGlobex = await harness.session("eve", "globex");
  });
  afterAll(async () => {
    await harness?.close();
  });

  it("issues a personal key shown once, listed afterwards only by its preview", async () => {
    const issued = await call(harness, "POST", "/llm/apis", alice, { name: "laptop", description: "dev" });

    expect(issued.status).toBe(201);
    expect(issued.body).toEqual({
      uuid: expect.stringMatching(/^[0-9a-f-]{36}$/),
      name: "laptop",
      description: "dev",
      isOrganization: false,
      status: 1,
      key: expect.stringMatching(/^svc_[A-Za-z0-9_-]{43}$/),
      createdAt: expect.any(String),
    });
    const key = issued.body.key as string;
    expect(await modelsStatus(harness, key)).toBe(200);

    const listed = await call(harness, "GET", "/llm/apis?isOrganization=false", alice);
    expect(listed.status).toBe(200);
    const entry = (listed.body.data as Record<string, unknown>[]).find(
      (item) => item.uuid === issued.body.uuid,
    );
    expect(entry).toEqual({
      uuid: issued.body.uuid,
      name: "laptop",
      description: "dev",
      isOrganization: false,
      status: 1,
      keyPreview: `svc_${key.slice(4, 8)}…${key.slice(-4)}`,
      createdAt: issued.body.createdAt,
      limits: {
        monthlySpendLimitWon: null,
        totalSpendLimitWon: null,
        rateLimitRequestsPerMinute: null,
        allowedModels: null,
      },
      spend: { month: expect.stringMatching(/^\d{4}-\d{2}$/), monthWon: "0", totalWon: "0" },
    });
    expect(JSON.stringify(listed.body)).not.toContain(key);
    const stored = await harness.service.ledger.pool.query(
      "SELECT data::text, metadata::text FROM ledger_events",
    );
    expect(JSON.stringify(stored.rows)).not.toContain(key.slice(4));
  });

  it("given a key issued, then the ledger holds its HMAC-SHA256 under KEY_PEPPER, never a hash anyone could compute without the pepper", async () => {
    const issued = await harness.issueKey(alice);
    const [event] = await harness.service.ledger.store.readStream(`apikey-${issued.uuid}`);
    expect(event?.type).toBe("ApiKeyIssued");
    const stored = (event!.data as { keyHash: string }).keyHash;
    // A stolen copy of the ledger must not let anyone test guessed keys: without the pepper, no hash matches.
    expect(stored).toBe(createHmac("sha256", testSecrets.keyPepper).update(issued.key).digest("hex"));
    expect(stored).not.toBe(createHmac("sha256", "").update(issued.key).digest("hex"));
    expect(stored).not.toBe(createHash("sha256").update(issued.key).digest("hex"));
    expect(await modelsStatus(harness, issued.key)).toBe(200);
  });

  it("lists newest first and never shows another user's keys", async () => {
    const first = await call(harness, "POST", "/llm/apis", bob, { name: "first" });
    const second = await call(harness, "POST", "/llm/apis", bob, { name: "second" });
    const listed = await call(harness, "GET", "/llm/apis", bob);
    expect((listed.body.data as { uuid: string }[]).map((item) => item.uuid)).toEqual([
      second.body.uuid,
      first.body.uuid,
    ]);
    const alices = await call(harness, "GET", "/llm/apis", alice);
    expect((alices.body.data as { uuid: string }[]).map((item) => item.uuid)).not.toContain(first.body.uuid);
  });

  it("deactivates and reactivates a key, effective for the very next request", async () => {
    const issued = await harness.issueKey(alice);
    const off = await call(harness, "PATCH", `/llm/apis/${issued.uuid}/status`, alice, { status: 0 });
    expect(off).toMatchObject({ status: 200, body: { uuid: issued.uuid, status: 0 } });
    expect(await modelsStatus(harness, issued.key)).toBe(401);

    const on = await call(harness, "PATCH", `/llm/apis/${issued.uuid}/status`, alice, { status: 1 });
    expect(on).toMatchObject({ status: 200, body: { uuid: issued.uuid, status: 1 } });
    expect(await modelsStatus(harness, issued.key)).toBe(200);
  });

  it("answers twenty status changes of one key sent at once, each 200, and records each one", async () => {
    const issued = await harness.issueKey(alice);
    const statuses = Array.from({ length: 20 }, (_, index) => index % 2);

    const replies = await Promise.all(
      statuses.map((status) => call(harness, "PATCH", `/llm/apis/${issued.uuid}/status`, alice, { status })),
    );

    expect(replies.map((reply) => reply.status)).toEqual(statuses.map(() => 200));
    const changes = await harness.service.ledger.pool.query<{ count: string }>(
      "SELECT count(*) AS count FROM ledger_events WHERE stream_id = $1 AND type = 'ApiKeyStatusChanged'",
      [`apikey-${issued.uuid}`],
    );
    expect(Number(changes.rows[0]!.count)).toBe(20);
    const listed = await call(harness, "GET", "/llm/apis", alice);
    const key = (listed.body.data as { uuid: string; status: number }[]).find(
      (item) => item.uuid === issued.uuid,
    );
    expect(await modelsStatus(harness, issued.key)).toBe(key!.status === 1 ? 200 : 401);
  }, 60_000);

  it("deletes a key for good", async () => {
    const issued = await harness.issueKey(alice);
    const deleted = await call(harness, "DELETE", `/llm/apis/${issued.uuid}`, alice);
    expect(deleted).toMatchObject({ status: 200, body: { uuid: issued.uuid, deleted: true } });
    expect(await modelsStatus(harness, issued.key)).toBe(401);
    const listed = await call(harness, "GET", "/llm/apis", alice);
    expect((listed.body.data as { uuid: string }[]).map((item) => item.uuid)).not.toContain(issued.uuid);
    const reactivated = await call(harness, "PATCH", `/llm/apis/${issued.uuid}/status`, alice, { status: 1 });
    expect(reactivated).toMatchObject({ status: 404, body: { status: 120 } });
    expect(await modelsStatus(harness, issued.key)).toBe(401);
  });

  it("shares organization keys with every session of that organization, and no one else", async () => {
    const issued = await call(harness, "POST", "/llm/apis", carolOfAcme, {
      name: "team",
      isOrganization: true,
    });
    expect(issued.body).toMatchObject({ isOrganization: true, status: 1 });

    const seenByDave = await call(harness, "GET", "/llm/apis?isOrganization=true", daveOfAcme);
    expect((seenByDave.body.data as { uuid: string }[]).map((item) => item.uuid)).toContain(issued.body.uuid);
    expect(
      await call(harness, "PATCH", `/llm/apis/${issued.body.uuid}/status`, daveOfAcme, { status: 0 }),
    ).toMatchObject({
      status: 200,
    });

    const seenByEve = await call(harness, "GET", "/llm/apis?isOrganization=true", eveOfGlobex);
    expect((seenByEve.body.data as { uuid: string }[]).map((item) => item.uuid)).not.toContain(
      issued.body.uuid,
    );
    for (const [method, path, body] of [
      ["PATCH", `/llm/apis/${issued.body.uuid}/status`, { status: 1 }],
      ["DELETE", `/llm/apis/${issued.body.uuid}`, undefined],
    ] as const) {
      expect(await call(harness, method, path, eveOfGlobex, body)).toMatchObject({
        status: 404,
        body: { status: 120 },
      });
      expect(await call(harness, method, path, alice, body)).toMatchObject({
        status: 404,
        body: { status: 120 },
      });
    }
  });

  it("refuses someone else's personal key as not found", async () => {
    const issued = await harness.issueKey(alice);
    const result = await call(harness, "DELETE", `/llm/apis/${issued.uuid}`, bob);
    expect(result).toMatchObject({ status: 404, body: { status: 120, message: expect.any(String) } });
    expect(await modelsStatus(harness, issued.key)).toBe(200);
  });

  it.each([
    ["POST", "/llm/apis", { name: "" }, "name"],
    ["POST", "/llm/apis", { description: "no name" }, "name"],
    ["POST", "/llm/apis", { name: "x", isOrganization: "yes" }, "isOrganization"],
    ["POST", "/llm/apis", { name: "org key without org", isOrganization: true }, "isOrganization"],
    // A misspelt field is named, rather than a personal key issued in place of an organization's.
    [
      "POST",
      "/llm/apis",
      { name: "misspelt", isOrganisation: true },
      "isOrganisation: is not a field of a key",
    ],
    ["GET", "/llm/apis?isOrganization=maybe", undefined, "isOrganization"],
  ] as const)("rejects %s %s %j with 400/100 naming the field", async (method, path, body, field) => {
    const result = await call(harness, method, path, alice, body);
    expect(result.status).toBe(400);
    expect(result.body).toMatchObject({ status: 100, error: { code: 100 } });
    expect(result.body.message).toContain(field);
  });

  it.each([
    [{}, "name: is required"],
    [{ name: 5 }, "name: must be a string"],
    [{ name: "x", description: 5 }, "description: must be a string"],
    [{ name: "x", isOrganization: "true" }, "isOrganization: must be true or false"],
  ])(
    "given POST /llm/apis %j, then 400/100 says %s in the words of the other fields' refusals",
    async (body, message) => {
      const result = await call(harness, "POST", "/llm/apis", alice, body);
      expect(result).toMatchObject({ status: 400, body: { status: 100, message } });
    },
  );

  it("rejects a status other than 1 or 0", async () => {
    const issued = await harness.issueKey(alice);
    const result = await call(harness, "PATCH", `/llm/apis/${issued.uuid}/status`, alice, { status: 2 });
    expect(result).toMatchObject({ status: 400, body: { status: 100 } });
  });

  it("needs a valid session", async () => {
    const expired = (await harness.service.sessions.mint({ userId: "alice", organizationId: null }, -10))
      .token;
    for (const token of [undefined, "not-a-jwt", expired, `${alice}x`]) {
      const result = await call(harness, "GET", "/llm/apis", token);
      expect(result).toMatchObject({ status: 401, body: { status: 110 } });
    }
    const viaCookie = await fetch(`${harness.url}/llm/apis`, {
      headers: { cookie: `theme=dark; session=${alice}` },
    });
    expect(viaCookie.status).toBe(200);
  });
});
