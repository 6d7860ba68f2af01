import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allProjections } from "../../projections";
import { rebuildProjections } from "../../src/ledger/ledger-maintenance";
import { verifyProjections } from "../../src/ledger/verify-projections";
import { signInOverHttp } from "../console/support/oidc-sign-in-over-http";
import { type OpenIdProvider, startOpenIdProvider } from "../console/support/openid-provider";
import { type GatewayHarness, startGatewayHarness } from "../support/gateway-harness";
import { callJson, type JsonReply } from "../support/json-call";

/**
 * A provider's role claim wins (C14), and a role change holds for sessions already issued: the console signs
 * in through a real OpenID provider (oidc-provider, its development login and consent pages driven over
 * HTTP), whose `org_role` claim the gateway reads. When the provider changes a user's role, the next sign-in
 * tells the gateway, and from then on the user's older sessions act by the new claim, not the one they carry.
 */

const organizationId = "org-provider";

describe("a provider's role claim, across sign-ins", () => {
  let provider: OpenIdProvider;
  let gateway: GatewayHarness;
  const accounts: Record<string, { claims: Record<string, string> }> = {};

  /** Signs `login` in as a browser would: the gateway, the provider's login and consent, the callback. */
  async function signIn(login: string): Promise<string> {
    const outcome = await signInOverHttp(gateway.url, login);
    if (!outcome.signedIn)
      throw new Error(`sign-in refused (${outcome.status}): ${outcome.html.slice(0, 300)}`);
    return outcome.token;
  }

  const call = (method: string, path: string, token: string, body?: unknown) =>
    callJson(gateway.url, method, path, token, body);

  function expectRefused(reply: JsonReply, what: string) {
    expect([reply.status, reply.body.status], `${what}: ${JSON.stringify(reply.body)}`).toEqual([403, 160]);
  }

  const claim = (userId: string, role: string | undefined) => {
    accounts[userId] = {
      claims: { org_id: organizationId, ...(role === undefined ? {} : { org_role: role }) },
    };
  };

  beforeAll(async () => {
    provider = await startOpenIdProvider(accounts);
    gateway = await startGatewayHarness({
      label: "organization_role_claims",
      service: {
        oidc: {
          issuer: provider.issuer,
          clientId: provider.clientId,
          clientSecret: provider.clientSecret,
          userClaim: "sub",
          organizationClaim: "org_id",
          roleClaim: "org_role",
        },
      },
    });
    provider.register(`${gateway.url}/console/oidc/callback`);
    // The organization's first member, its owner, through a session the platform minted.
    const owner = await gateway.session("provider-owner", organizationId);
    expect((await call("GET", "/llm/organization/members", owner)).status).toBe(200);
  }, 120_000);

  afterAll(async () => {
    await gateway?.close();
    await provider?.close();
  });

  it("given an admin by the provider's claim, when the provider makes them a member and they sign in again, then their earlier session is a member's too", async () => {
    claim("alice", "admin");
    const earlier = await signIn("alice");
    const key = await gateway.issueKey(earlier, { isOrganization: true });
    const setLimits = (token: string) =>
      call("PUT", `/llm/apis/${key.uuid}/limits`, token, { monthlySpendLimitWon: "9" });
    expect((await setLimits(earlier)).status).toBe(200);

    claim("alice", "member");
    const later = await signIn("alice");
    expectRefused(await setLimits(later), "the later session");
    expectRefused(await setLimits(earlier), "the earlier session, after the provider's new claim");
    const seen = await call("GET", "/llm/organization/members", earlier);
    expect(seen.body.you).toMatchObject({ userId: "alice", role: "member" });

    // Made admin again by the provider: the next sign-in says so, for every session of hers.
    claim("alice", "admin");
    await signIn("alice");
    expect((await setLimits(earlier)).status).toBe(200);
  }, 60_000);

  it("given a provider that stops claiming a role, then the user's earlier claimed sessions act by the grants", async () => {
    claim("bob", "owner");
    const earlier = await signIn("bob");
    const setDefaults = (token: string) =>
      call("PUT", "/llm/organization/key-defaults", token, { allowedModels: null });
    expect((await setDefaults(earlier)).status).toBe(200);

    claim("bob", undefined);
    await signIn("bob");
    // Granted nothing: a member.
    expectRefused(await setDefaults(earlier), "the earlier session, the claim withdrawn");
  }, 60_000);

  it("given two users signing in to a new organization at once, each claimed a role, then its first member is its one owner", async () => {
    const newborn = "org-provider-newborn";
    accounts.carol = { claims: { org_id: newborn, org_role: "member" } };
    accounts.dave = { claims: { org_id: newborn, org_role: "admin" } };
    const [carol, dave] = await Promise.all([signIn("carol"), signIn("dave")]);
    const replies = await Promise.all(
      [carol, dave].map((token) => call("GET", "/llm/organization/members", token)),
    );
    expect(replies.map((reply) => reply.body.you)).toEqual([
      expect.objectContaining({ userId: "carol", role: "member" }),
      expect.objectContaining({ userId: "dave", role: "admin" }),
    ]);
    const granted = await gateway.service.ledger.pool.query<{ user_id: string }>(
      "SELECT user_id FROM projection_organization_members WHERE organization_id = $1 AND role = 'owner'",
      [newborn],
    );
    expect(granted.rows).toHaveLength(1);
    const events = await gateway.service.ledger.pool.query<{ type: string }>(
      "SELECT type FROM ledger_events WHERE stream_id = $1 ORDER BY position",
      [`organization-${newborn}`],
    );
    expect(events.rows.map((row) => row.type).sort()).toEqual([
      "OrganizationRoleClaimed",
      "OrganizationRoleClaimed",
      "OrganizationRoleGranted",
    ]);
  }, 60_000);

  it("each claim the provider changes is one event with its actor and time, and the claims rebuild as they were", async () => {
    const claims = await gateway.service.ledger.pool.query<{
      data: { userId: string; role: string | null };
      actor: string;
      occurredAt: string;
    }>(
      `SELECT data, metadata->>'actor' AS actor, metadata->>'occurredAt' AS "occurredAt" FROM ledger_events
       WHERE stream_id = $1 AND type = 'OrganizationRoleClaimed' ORDER BY position`,
      [`organization-${organizationId}`],
    );
    // Signing in with an unchanged claim records nothing.
    expect(claims.rows.map((row) => [row.data.userId, row.data.role])).toEqual([
      ["alice", "admin"],
      ["alice", "member"],
      ["alice", "admin"],
      ["bob", "owner"],
      ["bob", null],
    ]);
    for (const row of claims.rows) {
      expect(row.actor).toBe(`oidc:${provider.issuer}`);
      expect(Number.isNaN(Date.parse(row.occurredAt))).toBe(false);
    }
    const context = {
      pool: gateway.service.ledger.pool,
      store: gateway.service.ledger.store,
      projections: allProjections,
    };
    const claimRows = async () =>
      (
        await gateway.service.ledger.pool.query(
          "SELECT * FROM projection_organization_role_claims ORDER BY organization_id, user_id",
        )
      ).rows;
    const before = await claimRows();
    expect(before).toHaveLength(4);
    expect(await verifyProjections(context)).toEqual([]);
    await rebuildProjections(context, { batchSizeMax: 1_000, chunkEventsMax: 2 });
    expect(await claimRows()).toEqual(before);
    await rebuildProjections(context, { batchSizeMax: 2, fold: "memory" });
    expect(await claimRows()).toEqual(before);
  }, 60_000);
});
