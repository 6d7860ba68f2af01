import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GatewayHarness, startGatewayHarness, testSecrets } from "../support/gateway-harness";
import { callJson, type JsonReply } from "../support/json-call";

/**
 * Roles in an organization (C14) where they meet what lies outside one organization: a user who belongs to
 * two organizations acts in each by that organization's role alone, and an admin acting for an
 * organization through /admin is no member of it — the member a key is issued for joins as by issuing it.
 */

describe("roles in an organization, across organizations and the admin API", () => {
  let harness: GatewayHarness;

  const call = (method: string, path: string, token: string, body?: unknown) =>
    callJson(harness.url, method, path, token, body);
  const admin = (method: string, path: string, body?: unknown) =>
    callJson(harness.url, method, `/admin${path}`, testSecrets.adminToken, body);

  function expectRefused(reply: JsonReply, what: string) {
    expect([reply.status, reply.body.status], `${what}: ${JSON.stringify(reply.body)}`).toEqual([403, 160]);
  }

  async function eventCount(): Promise<number> {
    const result = await harness.service.ledger.pool.query<{ count: string }>(
      "SELECT count(*) AS count FROM ledger_events",
    );
    return Number(result.rows[0]!.count);
  }

  async function grantsOf(organizationId: string) {
    const result = await harness.service.ledger.pool.query<{ data: unknown; actor: string }>(
      `SELECT data, metadata->>'actor' AS actor FROM ledger_events
       WHERE stream_id = $1 AND type = 'OrganizationRoleGranted' ORDER BY position`,
      [`organization-${organizationId}`],
    );
    return result.rows;
  }

  beforeAll(async () => {
    harness = await startGatewayHarness({
      label: "organization_roles_across",
      service: { adminToken: testSecrets.adminToken },
    });
  }, 120_000);

  afterAll(async () => {
    await harness?.close();
  });

  it("given a user who owns one organization and is a member of another, when they act in each, then each session acts by its own organization's role", async () => {
    // Given: "dual" is the first member of org-dual-own, and joins org-dual-other after its owner.
    const own = await harness.session("dual", "org-dual-own");
    const otherOwner = await harness.session("other-owner", "org-dual-other");
    expect((await call("GET", "/llm/organization/members", own)).body).toMatchObject({
      you: { role: "owner" },
    });
    expect((await call("GET", "/llm/organization/members", otherOwner)).body).toMatchObject({
      you: { role: "owner" },
    });
    const other = await harness.session("dual", "org-dual-other");
    const ownKey = await harness.issueKey(own, { isOrganization: true, name: "own org's" });
    const otherKey = await harness.issueKey(otherOwner, { isOrganization: true, name: "other org's" });

    // When it acts in the other organization, then it is a member there, whatever it is in its own.
    const seen = await call("GET", "/llm/organization/members", other);
    expect(seen.body).toMatchObject({
      organizationId: "org-dual-other",
      you: { userId: "dual", role: "member", actions: ["manage-keys", "read-members"] },
    });
    const before = await eventCount();
    const reserved: [string, string, unknown?][] = [
      ["PUT", `/llm/apis/${otherKey.uuid}/limits`, { monthlySpendLimitWon: "5" }],
      ["PUT", "/llm/organization/key-defaults", { allowedModels: null }],
      ["PUT", "/llm/organization/members/dual", { role: "admin" }],
      ["PUT", "/llm/alerts", { isOrganization: true, balanceBelowWon: "10" }],
      ["GET", "/llm/webhooks?isOrganization=true"],
    ];
    for (const [method, path, body] of reserved)
      expectRefused(await call(method, path, other, body), `member of the other ${method} ${path}`);
    expect(await eventCount()).toBe(before);
    // Nor does either session reach the other organization's keys: they are not the caller's (404/120).
    for (const [token, key] of [
      [other, ownKey],
      [own, otherKey],
    ] as const)
      for (const [method, path, body] of [
        ["PUT", `/llm/apis/${key.uuid}/limits`, { monthlySpendLimitWon: "5" }],
        ["GET", `/llm/apis/${key.uuid}/limits`],
        ["PATCH", `/llm/apis/${key.uuid}/status`, { status: 0 }],
        ["DELETE", `/llm/apis/${key.uuid}`],
      ] as const)
        expect(await call(method, path, token, body), `${method} ${path}`).toMatchObject({
          status: 404,
          body: { status: 120 },
        });

    // In its own organization, the same user is served as its owner.
    for (const [method, path, body] of [
      ["PUT", `/llm/apis/${ownKey.uuid}/limits`, { monthlySpendLimitWon: "5" }],
      ["PUT", "/llm/organization/key-defaults", { allowedModels: null }],
      ["PUT", "/llm/organization/members/newcomer", { role: "admin" }],
      ["PUT", "/llm/alerts", { isOrganization: true, balanceBelowWon: "10" }],
      ["GET", "/llm/webhooks?isOrganization=true"],
    ] as const) {
      const reply = await call(method, path, own, body);
      expect(reply.status, `owner ${method} ${path}: ${JSON.stringify(reply.body)}`).toBe(200);
    }

    // A grant in one organization changes nothing in the other.
    expect((await call("PUT", "/llm/organization/members/dual", otherOwner, { role: "admin" })).status).toBe(
      200,
    );
    expect((await call("GET", "/llm/organization/members", other)).body).toMatchObject({
      you: { role: "admin" },
    });
    expect((await call("PUT", "/llm/organization/members/dual", own, { role: "admin" })).status).toBe(403);
    expect((await call("GET", "/llm/organization/members", own)).body).toMatchObject({
      you: { role: "owner" },
      data: [
        { userId: "dual", role: "owner" },
        { userId: "newcomer", role: "admin" },
      ],
    });
  }, 60_000);

  it("given an organization nobody has seen, when an admin sets its key defaults and issues it keys for two users, then the first user is its owner and the second a member, and the admin is none", async () => {
    const organizationId = "org-by-admin";
    // The admin's own changes record no member: the organization is still unseen after its defaults.
    expect(
      await admin("PUT", `/organizations/${organizationId}/key-defaults`, {
        allowedModels: ["alpha-5.4-mini"],
      }),
    ).toMatchObject({ status: 200 });
    expect(await grantsOf(organizationId)).toEqual([]);

    const first = await admin("POST", "/keys", {
      account: `organization:${organizationId}`,
      name: "for the first",
      issuedForUserId: "by-admin-first",
    });
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    const second = await admin("POST", "/keys", {
      account: `organization:${organizationId}`,
      name: "for the second",
      issuedForUserId: "by-admin-second",
    });
    expect(second.status, JSON.stringify(second.body)).toBe(201);
    // The admin's change to a key's limits is the admin's, and makes no one a member.
    expect(
      await admin("PUT", `/keys/${second.body.uuid as string}/limits`, { monthlySpendLimitWon: "50" }),
    ).toMatchObject({ status: 200 });

    expect(await grantsOf(organizationId)).toEqual([
      {
        data: { organizationId, userId: "by-admin-first", role: "owner" },
        actor: "system:organization-roles",
      },
    ]);
    const secondSession = await harness.session("by-admin-second", organizationId);
    expect((await call("GET", "/llm/organization/members", secondSession)).body).toMatchObject({
      you: { userId: "by-admin-second", role: "member" },
      data: [
        { userId: "by-admin-first", role: "owner" },
        { userId: "by-admin-second", role: "member" },
      ],
    });
    expectRefused(
      await call("DELETE", `/llm/apis/${second.body.uuid as string}/limits`, secondSession),
      "the member the admin issued a key for clears its limits",
    );
    const firstSession = await harness.session("by-admin-first", organizationId);
    expect(
      await call("PUT", "/llm/organization/members/by-admin-second", firstSession, { role: "admin" }),
    ).toMatchObject({ status: 200, body: { role: "admin" } });
  }, 60_000);
});
