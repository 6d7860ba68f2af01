import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GatewayHarness, startGatewayHarness, testSecrets } from "../../support/gateway-harness";

/**
 * An admin gets a user in and equipped: a one-time console sign-in link that dies in minutes and signs in
 * once even across a restart, and a key issued for a user or an organization, its event naming the admin.
 */

let harness: GatewayHarness;

async function admin(
  path: string,
  body: unknown,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${harness.url}/admin${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${testSecrets.adminToken}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/** Opens a link as a browser does from a pasted address (`Sec-Fetch-Site: none`). */
async function signIn(url: string, path: string): Promise<string | null> {
  const response = await fetch(`${url}${path}`, {
    redirect: "manual",
    headers: { "sec-fetch-site": "none" },
  });
  expect(response.status).toBe(303);
  return response.headers.get("location");
}

beforeAll(async () => {
  harness = await startGatewayHarness({
    label: "user_access",
    service: { adminToken: testSecrets.adminToken },
  });
}, 60_000);
afterAll(async () => {
  await harness?.close();
});

describe("POST /admin/sign-in-links", () => {
  it("given a link used once, when the gateway restarts, then it still signs in no one; a fresh link works after the restart", async () => {
    // Given
    const minted = await admin("/sign-in-links", { userId: "mina", organizationId: "hanbit" });
    expect(minted.status).toBe(201);
    const path = minted.body.path as string;
    expect(path).toMatch(/^\/console\/sign-in\?code=/);
    expect(minted.body.url).toBe(`${harness.url}${path}`);
    const lifetimeMs = Date.parse(minted.body.expiresAt as string) - Date.now();
    expect(lifetimeMs).toBeGreaterThan(0);
    expect(lifetimeMs).toBeLessThanOrEqual(15 * 60_000);
    expect(await signIn(harness.url, path)).toBe("/console/");
    expect(await signIn(harness.url, path)).toBe("/console/?signIn=expired");
    const unused = (await admin("/sign-in-links", { userId: "mina" })).body.path as string;

    // When: the gateway restarts on the same database
    const restarted = await startGatewayHarness({
      label: "user_access_restarted",
      database: harness.database,
      service: { adminToken: testSecrets.adminToken },
    });
    try {
      // Then
      expect(await signIn(restarted.url, path)).toBe("/console/?signIn=expired");
      expect(await signIn(restarted.url, unused)).toBe("/console/");
      expect(await signIn(restarted.url, unused)).toBe("/console/?signIn=expired");
    } finally {
      await restarted.close();
    }
  }, 60_000);

  it("refuses a body without a user (400/100) and a caller without the admin token (401/110)", async () => {
    expect(await admin("/sign-in-links", {})).toMatchObject({ status: 400, body: { status: 100 } });
    const anonymous = await fetch(`${harness.url}/admin/sign-in-links`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ userId: "mina" }),
    });
    expect(anonymous.status).toBe(401);
  });
});

describe("POST /admin/keys", () => {
  it("given an organization, when the admin issues it a key for a member, then the key works, its members list it, and its event names the admin", async () => {
    // When
    const issued = await admin("/keys", {
      account: "organization:hanbit",
      name: "issued by ops",
      issuedForUserId: "joon",
    });

    // Then
    expect(issued).toMatchObject({
      status: 201,
      body: { name: "issued by ops", isOrganization: true, status: 1, key: expect.stringMatching(/^svc_/) },
    });
    const models = await harness.openai(issued.body.key as string).models.list();
    expect(models.data.length).toBeGreaterThan(0);
    const member = await harness.session("joon", "hanbit");
    const listed = await fetch(`${harness.url}/llm/apis?isOrganization=true`, {
      headers: { authorization: `Bearer ${member}` },
    });
    const keys = ((await listed.json()) as { data: { uuid: string }[] }).data;
    expect(keys.map((key) => key.uuid)).toContain(issued.body.uuid);
    const event = await harness.service.ledger.pool.query<{ data: unknown; metadata: { actor: string } }>(
      "SELECT data, metadata FROM ledger_events WHERE stream_id = $1",
      [`apikey-${issued.body.uuid as string}`],
    );
    expect(event.rows[0]).toMatchObject({
      data: { owner: { kind: "organization", id: "hanbit" }, issuedByUserId: "joon" },
      metadata: { actor: "admin" },
    });
  });

  it("issues a personal key for a user, and refuses a malformed account with 400/100", async () => {
    const issued = await admin("/keys", { account: "user:sora", name: "personal" });
    expect(issued).toMatchObject({ status: 201, body: { isOrganization: false } });
    const session = await harness.session("sora");
    const listed = await fetch(`${harness.url}/llm/apis`, {
      headers: { authorization: `Bearer ${session}` },
    });
    expect(((await listed.json()) as { data: { uuid: string }[] }).data.map((key) => key.uuid)).toEqual([
      issued.body.uuid,
    ]);
    expect(await admin("/keys", { account: "team:x", name: "bad" })).toMatchObject({
      status: 400,
      body: { status: 100, message: expect.stringContaining("account") },
    });
  });

  it("refuses an organization key for no member, and a personal key for another user, with 400/100: an admin is no member", async () => {
    const before = await harness.service.ledger.pool.query("SELECT count(*) FROM ledger_events");
    expect(await admin("/keys", { account: "organization:nobody-named", name: "orphan" })).toMatchObject({
      status: 400,
      body: {
        status: 100,
        message: expect.stringMatching(/^issuedForUserId: is required for an organization key/),
      },
    });
    expect(await admin("/keys", { account: "user:sora", name: "x", issuedForUserId: "mina" })).toMatchObject({
      status: 400,
      body: {
        status: 100,
        message: expect.stringMatching(/^issuedForUserId: is only for an organization key/),
      },
    });
    const after = await harness.service.ledger.pool.query("SELECT count(*) FROM ledger_events");
    expect(after.rows).toEqual(before.rows);
    // The organization's first member is then the first person to arrive: its owner.
    const first = await harness.session("first-person", "nobody-named");
    const members = await fetch(`${harness.url}/llm/organization/members`, {
      headers: { authorization: `Bearer ${first}` },
    });
    expect(await members.json()).toMatchObject({ you: { userId: "first-person", role: "owner" } });
  });
});
