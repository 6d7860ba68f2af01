import { randomBytes, randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allProjections } from "../../projections";
import { organizationMembersProjection } from "../../projections/organization-members";
import { rebuildProjections } from "../../src/ledger/ledger-maintenance";
import { verifyProjections } from "../../src/ledger/verify-projections";
import { type GatewayHarness, startGatewayHarness } from "../support/gateway-harness";
import { callJson } from "../support/json-call";

/**
 * Roles in an organization (C14) through the real gateway and PostgreSQL: every organization route walked
 * with every role (2xx, or 403/160 where the role may not); the first member is the owner (on a ledger
 * without grants, the issuer of the first key); only an owner makes owners; the last owner stays; a
 * refused write appends nothing; the members projection verifies before and after a rebuild.
 */

interface Reply {
  status: number;
  body: Record<string, unknown>;
}

type Role = "owner" | "admin" | "member";
const roles: readonly Role[] = ["owner", "admin", "member"];

describe("roles in an organization", () => {
  let harness: GatewayHarness;

  async function call(method: string, path: string, token: string, body?: unknown): Promise<Reply> {
    return callJson(harness.url, method, path, token, body);
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

  function expectRefused(reply: Reply) {
    expect(reply.status, JSON.stringify(reply.body)).toBe(403);
    expect(reply.body).toMatchObject({ status: 160, error: { code: 160, type: "permission_error" } });
  }

  /** An organization with one member of each role: `<organizationId>-owner`, `-admin`, `-member`. */
  async function organizationWithEveryRole(organizationId: string): Promise<Record<Role, string>> {
    const sessions = {} as Record<Role, string>;
    for (const role of roles)
      sessions[role] = await harness.session(`${organizationId}-${role}`, organizationId);
    expect((await call("GET", "/llm/organization/members", sessions.owner)).status).toBe(200);
    for (const role of ["admin", "member"] as const)
      expect(
        (await call("PUT", `/llm/organization/members/${organizationId}-${role}`, sessions.owner, { role }))
          .status,
      ).toBe(200);
    return sessions;
  }

  beforeAll(async () => {
    harness = await startGatewayHarness({ label: "organization_roles" });
  }, 120_000);

  afterAll(async () => {
    await harness?.close();
  });

  it("given an organization nobody has seen, when a member lists its members, then that member is its owner", async () => {
    const token = await harness.session("first-visitor", "org-first");
    const reply = await call("GET", "/llm/organization/members", token);
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({
      organizationId: "org-first",
      you: { userId: "first-visitor", role: "owner" },
      data: [{ userId: "first-visitor", role: "owner" }],
    });
    expect((reply.body.you as { actions: string[] }).actions).toContain("grant-roles");
    expect(await grantsOf("org-first")).toEqual([
      {
        data: { organizationId: "org-first", userId: "first-visitor", role: "owner" },
        actor: "system:organization-roles",
      },
    ]);
    // The next one is a member, and seeing them records nothing.
    const second = await call(
      "GET",
      "/llm/organization/members",
      await harness.session("second", "org-first"),
    );
    expect(second.body).toMatchObject({ you: { role: "member", actions: ["manage-keys", "read-members"] } });
    expect(await grantsOf("org-first")).toHaveLength(1);
  });

  /** An organization key's issuance as a release before roles wrote it: the key's event, and no grant. */
  async function issueKeyWithoutGrant(organizationId: string, userId: string): Promise<void> {
    const keyId = randomUUID();
    const appended = await harness.service.ledger.store.append({
      streamId: `apikey-${keyId}`,
      expectedVersion: "no-stream",
      events: [
        {
          eventId: randomUUID(),
          event: {
            type: "ApiKeyIssued",
            data: {
              keyId,
              owner: { kind: "organization", id: organizationId },
              issuedByUserId: userId,
              name: `${userId}'s key`,
              description: "",
              keyHash: randomBytes(32).toString("hex"),
              keyPreview: "svc_…abcd",
            },
            metadata: { actor: `user:${userId}`, occurredAt: new Date().toISOString() },
          },
        },
      ],
    });
    await harness.service.waiter.waitFor(appended.position, [organizationMembersProjection.name], 10_000);
  }

  it("given an organization whose first key was issued before roles, then its issuer is the owner and later issuers members", async () => {
    await issueKeyWithoutGrant("org-early", "early-issuer");
    await issueKeyWithoutGrant("org-early", "late-issuer");
    const reply = await call(
      "GET",
      "/llm/organization/members",
      await harness.session("late-issuer", "org-early"),
    );
    expect(reply.body).toMatchObject({
      you: { userId: "late-issuer", role: "member" },
      data: [
        { userId: "early-issuer", role: "owner" },
        { userId: "late-issuer", role: "member" },
      ],
    });
    expect(await grantsOf("org-early")).toEqual([]);
  });

  it("given a first key issued while another user's first request asks for their role, then one of them is owner", async () => {
    // Ten fresh organizations, each seen first by two users at once: one issuing a key, one listing members.
    for (let trial = 0; trial < 10; trial++) {
      const organizationId = `org-race-${trial}`;
      const [issuer, visitor] = await Promise.all([
        harness.session("issuer", organizationId),
        harness.session("visitor", organizationId),
      ]);
      const [issued, listed] = await Promise.all([
        call("POST", "/llm/apis", issuer, { name: "first", isOrganization: true }),
        call("GET", "/llm/organization/members", visitor),
      ]);
      expect(issued.status).toBe(201);
      expect(listed.status).toBe(200);
      const members = await call("GET", "/llm/organization/members", visitor);
      const owners = (members.body.data as { userId: string; role: string }[]).filter(
        (member) => member.role === "owner",
      );
      expect(owners, organizationId).toHaveLength(1);
      expect(await grantsOf(organizationId)).toEqual([
        {
          data: { organizationId, userId: owners[0]!.userId, role: "owner" },
          actor: "system:organization-roles",
        },
      ]);
    }
  });

  it("walks every organization route with every role: each is served, or refused 403/160", async () => {
    const sessions = await organizationWithEveryRole("org-walk");
    await harness.topUp({ kind: "organization", id: "org-walk" }, "1000");
    for (const role of roles) {
      const token = sessions[role];
      const writesLimits = role !== "member";
      const served = async (method: string, path: string, body?: unknown, status = 200) => {
        const reply = await call(method, path, token, body);
        expect(reply.status, `${role} ${method} ${path}: ${JSON.stringify(reply.body)}`).toBe(status);
        return reply;
      };
      const servedOrRefused = async (method: string, path: string, body?: unknown) => {
        if (writesLimits) return served(method, path, body);
        const before = await eventCount();
        expectRefused(await call(method, path, token, body));
        expect(await eventCount(), `${role} ${method} ${path} appended`).toBe(before);
        return undefined;
      };

      await served("GET", "/llm/organization/members");
      const issued = await served("POST", "/llm/apis", { name: `${role} key`, isOrganization: true }, 201);
      const keyPath = `/llm/apis/${issued.body.uuid as string}`;
      await served("GET", "/llm/apis?isOrganization=true");
      await served("PATCH", `${keyPath}/status`, { status: 0 });
      await served("PATCH", `${keyPath}/status`, { status: 1 });
      await served("GET", `${keyPath}/limits`);
      await servedOrRefused("PUT", `${keyPath}/limits`, { monthlySpendLimitWon: "500" });
      await servedOrRefused("DELETE", `${keyPath}/limits`);
      await served("GET", "/llm/organization/key-defaults");
      await servedOrRefused("PUT", "/llm/organization/key-defaults", { allowedModels: null });
      await served("GET", "/llm/usage/activity?isOrganization=true");
      await served("GET", "/llm/usage?isOrganization=true");
      await servedOrRefused("PUT", `/llm/organization/members/newcomer-of-${role}`, { role: "member" });
      await served("DELETE", keyPath);
      // A personal key's limits stay its owner's, whatever the role.
      const personal = await served("POST", "/llm/apis", { name: `${role} own` }, 201);
      await served("PUT", `/llm/apis/${personal.body.uuid as string}/limits`, { totalSpendLimitWon: "100" });
    }
  }, 120_000);

  it("a member reads only the activity of the organization keys they issued; owners and admins read everyone's", async () => {
    const sessions = await organizationWithEveryRole("org-activity");
    await harness.topUp({ kind: "organization", id: "org-activity" }, "1000");
    const ownerKey = await harness.issueKey(sessions.owner, { isOrganization: true });
    const memberKey = await harness.issueKey(sessions.member, { isOrganization: true });
    for (const { key } of [ownerKey, memberKey])
      await harness.openai(key).chat.completions.create({
        model: "alpha-5.4-mini",
        max_tokens: 5,
        messages: [{ role: "user", content: "Hi" }],
      });
    const keysSeenBy = async (token: string, expected: number) => {
      for (let attempt = 0; attempt < 100; attempt++) {
        const reply = await call("GET", "/llm/usage/activity?isOrganization=true", token);
        const keys = (reply.body.data as { keyId: string }[]).map((row) => row.keyId).sort();
        if (keys.length >= expected) return keys;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      throw new Error("the request log never showed the requests");
    };
    expect(await keysSeenBy(sessions.admin, 2)).toEqual([ownerKey.uuid, memberKey.uuid].sort());
    expect(await keysSeenBy(sessions.member, 1)).toEqual([memberKey.uuid]);

    // A key's spend is its issuer's activity: a member sees it for their own keys alone, in the list and
    // in a key's limits; every member still lists (and manages) every organization key.
    const spendsSeenBy = async (token: string) => {
      const listed = await call("GET", "/llm/apis?isOrganization=true", token);
      return Object.fromEntries(
        (listed.body.data as { uuid: string; spend: unknown }[]).map((key) => [key.uuid, key.spend]),
      );
    };
    const spend = expect.objectContaining({ monthWon: expect.any(String), totalWon: expect.any(String) });
    expect(await spendsSeenBy(sessions.owner)).toEqual({ [ownerKey.uuid]: spend, [memberKey.uuid]: spend });
    expect(await spendsSeenBy(sessions.member)).toEqual({ [ownerKey.uuid]: null, [memberKey.uuid]: spend });
    const limitsSeenBy = async (token: string, uuid: string) =>
      (await call("GET", `/llm/apis/${uuid}/limits`, token)).body;
    expect(await limitsSeenBy(sessions.member, ownerKey.uuid)).toMatchObject({ spend: null });
    expect(await limitsSeenBy(sessions.member, memberKey.uuid)).toMatchObject({ spend });
    expect(await limitsSeenBy(sessions.admin, memberKey.uuid)).toMatchObject({ spend });
  }, 60_000);

  it("only an owner makes owners or changes an owner's role", async () => {
    const sessions = await organizationWithEveryRole("org-owners");
    // A second owner, so that no refusal below is the last owner's rule: each is the role's.
    const second = await call("PUT", "/llm/organization/members/org-owners-second", sessions.owner, {
      role: "owner",
    });
    expect(second.status).toBe(200);
    const before = await eventCount();
    expectRefused(
      await call("PUT", "/llm/organization/members/org-owners-member", sessions.admin, { role: "owner" }),
    );
    expectRefused(
      await call("PUT", "/llm/organization/members/org-owners-admin", sessions.admin, { role: "owner" }),
    );
    expectRefused(
      await call("PUT", "/llm/organization/members/org-owners-owner", sessions.admin, { role: "member" }),
    );
    expectRefused(
      await call("PUT", "/llm/organization/members/org-owners-admin", sessions.member, { role: "admin" }),
    );
    expect(await eventCount()).toBe(before);
    // An admin grants admin; an owner grants owner.
    const granted = await call("PUT", "/llm/organization/members/someone", sessions.admin, { role: "admin" });
    expect(granted).toMatchObject({ status: 200, body: { userId: "someone", role: "admin" } });
    const owner = await call("PUT", "/llm/organization/members/org-owners-admin", sessions.owner, {
      role: "owner",
    });
    expect(owner).toMatchObject({ status: 200, body: { role: "owner" } });
    expect((await grantsOf("org-owners")).at(-1)).toEqual({
      data: { organizationId: "org-owners", userId: "org-owners-admin", role: "owner" },
      actor: "user:org-owners-owner",
    });
  }, 60_000);

  it("the last owner stays owner; with a second owner, one may step down", async () => {
    const sessions = await organizationWithEveryRole("org-last");
    const before = await eventCount();
    const stepDown = () =>
      call("PUT", "/llm/organization/members/org-last-owner", sessions.owner, { role: "admin" });
    const refused = await stepDown();
    expectRefused(refused);
    expect(refused.body.message).toMatch(/last owner/);
    expect(await eventCount()).toBe(before);
    await call("PUT", "/llm/organization/members/org-last-admin", sessions.owner, { role: "owner" });
    expect(await stepDown()).toMatchObject({ status: 200, body: { role: "admin" } });
    // The owner left is the last: the former owner, now admin, cannot demote them.
    expectRefused(
      await call("PUT", "/llm/organization/members/org-last-admin", sessions.owner, { role: "member" }),
    );
  }, 60_000);

  it("with the provider's role claim configured, a claimed role wins over the grants; a claim naming no role of ours is ignored", async () => {
    const owner = await harness.session("org-claims-owner", "org-claims");
    expect((await call("GET", "/llm/organization/members", owner)).status).toBe(200);
    // A gateway on the same ledger whose console signs in by OpenID Connect, the provider's role claim read.
    const withClaims = await startGatewayHarness({
      database: harness.database,
      service: {
        oidc: {
          issuer: "http://127.0.0.1:9/",
          clientId: "console",
          clientSecret: undefined,
          userClaim: "sub",
          organizationClaim: "org",
          roleClaim: "org_role",
        },
      },
    });
    try {
      const claimed = async (userId: string, providerRole: string) =>
        (
          await withClaims.service.sessions.mint(
            { userId, organizationId: "org-claims", providerRole },
            3_600,
          )
        ).token;
      const claimedAdmin = await claimed("org-claims-by-provider", "admin");
      const claimedStranger = await claimed("org-claims-stranger", "superuser");
      const callWithClaims = (token: string) =>
        callJson(withClaims.url, "PUT", "/llm/organization/key-defaults", token, { allowedModels: null });

      // Granted nothing, an admin by the provider's claim: may set the organization's defaults.
      expect((await callWithClaims(claimedAdmin)).status).toBe(200);
      // A claim that names no role of ours leaves the grants to decide: a member, refused.
      expectRefused(await callWithClaims(claimedStranger));
    } finally {
      await withClaims.close();
    }
  });

  it("without the provider's role claim configured, a token's org_role is ignored: the grants decide", async () => {
    const owner = await harness.session("org-unclaimed-owner", "org-unclaimed");
    expect((await call("GET", "/llm/organization/members", owner)).status).toBe(200);
    // Signed with the session secret and carrying the claim's name, as a platform's own token might.
    const intruder = (
      await harness.service.sessions.mint(
        { userId: "org-unclaimed-intruder", organizationId: "org-unclaimed", providerRole: "owner" },
        3_600,
      )
    ).token;
    const events = await eventCount();

    const members = await call("GET", "/llm/organization/members", intruder);
    expect(members.status).toBe(200);
    expect(members.body.you).toMatchObject({ role: "member" });
    expectRefused(
      await call("PUT", "/llm/organization/members/org-unclaimed-owner", intruder, { role: "member" }),
    );
    expectRefused(
      await call("PUT", "/llm/organization/members/org-unclaimed-intruder", intruder, { role: "owner" }),
    );
    expectRefused(await call("PUT", "/llm/organization/key-defaults", intruder, { allowedModels: null }));
    expect(await eventCount()).toBe(events);
  });

  it("refuses a bad role 400/100 and a session of no organization 400/100", async () => {
    const token = await harness.session("lonely");
    expect(await call("GET", "/llm/organization/members", token)).toMatchObject({
      status: 400,
      body: { status: 100, message: "This session belongs to no organization" },
    });
    const sessions = await organizationWithEveryRole("org-bad");
    const bad = await call("PUT", "/llm/organization/members/x", sessions.owner, { role: "boss" });
    expect(bad).toMatchObject({ status: 400, body: { status: 100 } });
  });

  it("twenty grants sent at once each answer 200 and each lands: the grants take turns, none is lost", async () => {
    const owner = await harness.session("org-burst-owner", "org-burst");
    expect((await call("GET", "/llm/organization/members", owner)).status).toBe(200);
    const userIds = Array.from({ length: 20 }, (_, index) => `org-burst-${index}`);

    const replies = await Promise.all(
      userIds.map((userId) => call("PUT", `/llm/organization/members/${userId}`, owner, { role: "admin" })),
    );

    expect(replies.map((reply) => reply.status)).toEqual(userIds.map(() => 200));
    const members = await call("GET", "/llm/organization/members", owner);
    const listed = members.body.data as { userId: string; role: string }[];
    expect(
      listed
        .filter((member) => member.role === "admin")
        .map((member) => member.userId)
        .sort(),
    ).toEqual([...userIds].sort());
    expect(await grantsOf("org-burst")).toHaveLength(21);
  }, 60_000);

  it("given all of the above, then ledger verify finds the members equal to a fold of the log, before and after a rebuild", async () => {
    const context = {
      pool: harness.service.ledger.pool,
      store: harness.service.ledger.store,
      projections: allProjections,
    };
    expect(await verifyProjections(context)).toEqual([]);
    await rebuildProjections(context, { batchSizeMax: 1_000, chunkEventsMax: 7 });
    expect(await verifyProjections(context)).toEqual([]);
    await rebuildProjections(context, { batchSizeMax: 5, fold: "memory" });
    expect(await verifyProjections(context)).toEqual([]);
    const members = await call("GET", "/llm/organization/members", await harness.session("x", "org-early"));
    expect(members.body.data).toMatchObject([
      { userId: "early-issuer", role: "owner" },
      { userId: "late-issuer", role: "member" },
    ]);
  }, 60_000);
});
