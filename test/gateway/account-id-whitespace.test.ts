import { SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GatewayHarness, startGatewayHarness, testSecrets } from "../support/gateway-harness";
import { callJson } from "../support/json-call";

/**
 * The id of a user or an organization is never blank and never starts or ends with whitespace, wherever one is
 * taken: a member's id in a role grant, an account in an admin path or query, a session's claims. An id of
 * spaces names no one, and " alice" would show as "alice" in the console while being another account, so each
 * is refused (400/100 naming the field; a session naming one is no session, 401/110) and nothing is recorded.
 * Bodies that name whom to sign in or issue for (`POST /admin/sessions`, `/admin/sign-in-links`,
 * `/admin/keys`' `issuedForUserId`) trim their ids, as they always have: there a blank id is "is required".
 */

let harness: GatewayHarness;
let owner: string;

beforeAll(async () => {
  harness = await startGatewayHarness({
    label: "account_id_whitespace",
    billing: {},
    service: { adminToken: testSecrets.adminToken },
  });
  owner = await harness.session("ws-owner", "ws-org");
  // The organization's first member, its owner, who may grant roles.
  expect((await callJson(harness.url, "GET", "/llm/organization/members", owner)).status).toBe(200);
}, 60_000);
afterAll(async () => {
  await harness?.close();
});

const admin = (method: string, path: string, body?: unknown) =>
  callJson(harness.url, method, path, testSecrets.adminToken, body);

async function grantEventCount(): Promise<number> {
  const result = await harness.service.ledger.pool.query<{ count: string }>(
    "SELECT count(*) AS count FROM ledger_events WHERE type = 'OrganizationRoleGranted'",
  );
  return Number(result.rows[0]!.count);
}

function expectRefused(reply: { status: number; body: Record<string, unknown> }, message: string) {
  expect(reply.status, JSON.stringify(reply.body)).toBe(400);
  expect(reply.body).toMatchObject({
    status: 100,
    message,
    error: { code: 100, type: "invalid_request_error" },
  });
}

describe("a member's id in PUT /llm/organization/members/{userId}", () => {
  it.each([
    ["a space", "%20", "userId: must not be blank"],
    ["spaces and a tab", "%20%20%09", "userId: must not be blank"],
    ["a no-break space", "%C2%A0", "userId: must not be blank"],
    ["a leading space", "%20alice", "userId: must not start or end with whitespace"],
    ["a trailing newline", "alice%0A", "userId: must not start or end with whitespace"],
  ])("given %s, then it is refused 400/100 and no role is granted", async (_case, encodedId, message) => {
    const before = await grantEventCount();
    const reply = await callJson(harness.url, "PUT", `/llm/organization/members/${encodedId}`, owner, {
      role: "member",
    });
    expectRefused(reply, message);
    expect(await grantEventCount()).toBe(before);
    const members = await callJson(harness.url, "GET", "/llm/organization/members", owner);
    expect((members.body.data as { userId: string }[]).map((member) => member.userId)).toEqual(["ws-owner"]);
  });

  it("given no id at all, then nothing is granted", async () => {
    const before = await grantEventCount();
    const reply = await callJson(harness.url, "PUT", "/llm/organization/members/", owner, { role: "member" });
    expect(reply.status).toBeGreaterThanOrEqual(400);
    expect(reply.status).toBeLessThan(500);
    expect(await grantEventCount()).toBe(before);
  });

  it("given an id with inner spaces, then it is a member's id like any other", async () => {
    const reply = await callJson(harness.url, "PUT", "/llm/organization/members/kim%20mina", owner, {
      role: "member",
    });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(reply.body).toMatchObject({ userId: "kim mina", role: "member" });
  });
});

describe("an account's id in the admin API", () => {
  it.each([
    ["POST", "/admin/accounts/user/%20/credits", { amountWon: "5" }, "id: must not be blank"],
    [
      "POST",
      "/admin/accounts/user/%20bob/credits",
      { amountWon: "5" },
      "id: must not start or end with whitespace",
    ],
    ["GET", "/admin/accounts/organization/%20", undefined, "id: must not be blank"],
    ["GET", "/admin/billing?account=user:%20", undefined, "account.id: must not be blank"],
    ["POST", "/admin/keys", { account: "user: ", name: "k" }, "account.id: must not be blank"],
  ])("%s %s is refused 400/100", async (method, path, body, message) => {
    expectRefused(await admin(method, path, body), message);
  });

  it("given ids with whitespace in the bodies that trim them, then they name the trimmed account, and a blank one is required", async () => {
    const minted = await admin("POST", "/admin/sessions", { userId: "  dana ", organizationId: " ws-org" });
    expect(minted.status).toBe(201);
    const members = await callJson(
      harness.url,
      "GET",
      "/llm/organization/members",
      minted.body.token as string,
    );
    expect(members.body).toMatchObject({ organizationId: "ws-org", you: { userId: "dana" } });
    expectRefused(await admin("POST", "/admin/sessions", { userId: "   " }), "userId: is required");
  });
});

describe("a session naming a blank or padded id", () => {
  it.each([
    ["a blank user", { sub: " " }],
    ["a padded user", { sub: "alice " }],
    ["a blank organization", { sub: "alice", org: "\t" }],
    ["a padded organization", { sub: "alice", org: " acme" }],
  ])("given %s, then it is no session (401/110)", async (_case, claims) => {
    const token = await new SignJWT("org" in claims ? { org: claims.org } : {})
      .setProtectedHeader({ alg: "HS256" })
      .setSubject(claims.sub)
      .setIssuedAt()
      .setExpirationTime("1h")
      .sign(new TextEncoder().encode(testSecrets.sessionSecret));
    const reply = await callJson(harness.url, "GET", "/llm/apis", token);
    expect(reply.status).toBe(401);
    expect(reply.body).toMatchObject({ status: 110 });
  });
});
