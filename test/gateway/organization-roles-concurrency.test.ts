import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allProjections } from "../../projections";
import { advisoryLockKeys } from "../../src/database/advisory-lock-keys";
import { rebuildProjections } from "../../src/ledger/ledger-maintenance";
import { verifyProjections } from "../../src/ledger/verify-projections";
import { type GatewayHarness, startGatewayHarness } from "../support/gateway-harness";
import { callJson, type JsonReply } from "../support/json-call";

/**
 * The role model's invariants (C14) under concurrency and odd sequences, through the real HTTP API of two
 * gateways on one database (each with its own in-process turns, so only the log's expected versions keep
 * them apart): the last owner stays; the first member an organization sees is its one owner; only an
 * owner makes owners; a role change holds for the next request of a session already issued; every grant is
 * an event with its actor and time, and the members projection rebuilds to the same rows.
 */

type Role = "owner" | "admin" | "member";

const oidc = {
  issuer: "http://127.0.0.1:9/",
  clientId: "console",
  clientSecret: undefined,
  userClaim: "sub",
  organizationClaim: "org",
  roleClaim: "org_role",
};

describe("roles in an organization, under concurrency, across two gateways", () => {
  let first: GatewayHarness;
  let second: GatewayHarness;

  /** Either gateway, in turn: the n-th call goes to gateway n mod 2. */
  const gatewayOf = (index: number) => (index % 2 === 0 ? first : second);

  const call = (gateway: GatewayHarness, method: string, path: string, token: string, body?: unknown) =>
    callJson(gateway.url, method, path, token, body);

  const grant = (gateway: GatewayHarness, token: string, userId: string, role: Role) =>
    call(gateway, "PUT", `/llm/organization/members/${userId}`, token, { role });

  async function membersOf(organizationId: string): Promise<{ userId: string; role: Role }[]> {
    const result = await first.service.ledger.pool.query<{ userId: string; role: Role }>(
      `SELECT user_id AS "userId", role FROM projection_organization_members
       WHERE organization_id = $1 ORDER BY user_id`,
      [organizationId],
    );
    return result.rows;
  }

  async function ownersOf(organizationId: string): Promise<string[]> {
    return (await membersOf(organizationId))
      .filter((member) => member.role === "owner")
      .map((member) => member.userId);
  }

  async function grantsOf(organizationId: string) {
    const result = await first.service.ledger.pool.query<{
      userId: string;
      role: Role;
      actor: string;
      occurredAt: string | null;
    }>(
      `SELECT data->>'userId' AS "userId", data->>'role' AS role, metadata->>'actor' AS actor,
              metadata->>'occurredAt' AS "occurredAt"
       FROM ledger_events WHERE stream_id = $1 AND type = 'OrganizationRoleGranted' ORDER BY position`,
      [`organization-${organizationId}`],
    );
    return result.rows;
  }

  function expectRefused(reply: JsonReply, what: string) {
    expect([reply.status, reply.body.status], `${what}: ${JSON.stringify(reply.body)}`).toEqual([403, 160]);
  }

  /** An organization whose first member `<id>-a` is owner, with the given other members granted by it. */
  async function organization(organizationId: string, others: Record<string, Role>) {
    const tokens: Record<string, string> = {};
    const owner = `${organizationId}-a`;
    tokens[owner] = await first.session(owner, organizationId);
    expect((await call(first, "GET", "/llm/organization/members", tokens[owner]!)).status).toBe(200);
    for (const [suffix, role] of Object.entries(others)) {
      const userId = `${organizationId}-${suffix}`;
      tokens[userId] = await first.session(userId, organizationId);
      expect((await grant(first, tokens[owner]!, userId, role)).status).toBe(200);
    }
    return tokens;
  }

  beforeAll(async () => {
    first = await startGatewayHarness({
      label: "organization_roles_concurrency",
      service: { webhookAllowPrivateNetworks: true },
    });
    second = await startGatewayHarness({
      database: first.database,
      service: { webhookAllowPrivateNetworks: true },
    });
  }, 120_000);

  afterAll(async () => {
    await second?.close();
    await first?.close();
  });

  it("given two owners, when twenty demotions of each other and of themselves are sent at once to both gateways, then one owner stays", async () => {
    for (let trial = 0; trial < 5; trial++) {
      const organizationId = `org-demote-${trial}`;
      const tokens = await organization(organizationId, { b: "owner" });
      const [a, b] = [`${organizationId}-a`, `${organizationId}-b`];
      const attempts: [string, string, Role][] = [
        [a, b, "member"],
        [b, a, "member"],
        [a, a, "admin"],
        [b, b, "admin"],
      ];

      const replies = await Promise.all(
        Array.from({ length: 20 }, (_, index) => {
          const [actor, target, role] = attempts[index % attempts.length]!;
          return grant(gatewayOf(index >> 2), tokens[actor]!, target, role);
        }),
      );

      for (const reply of replies) expect([200, 403], JSON.stringify(reply.body)).toContain(reply.status);
      expect(await ownersOf(organizationId), organizationId).toHaveLength(1);
      // One owner was demoted; the others were decided on the demoted state and refused, appending nothing.
      // Another grant may land beside it: an owner who stepped down to admin first may be made a member by
      // the other owner. No grant repeats the role its member already had.
      // From the first member's grant (owner), as the organization began.
      const roles = new Map<string, Role>();
      let ownersDemoted = 0;
      for (const granted of await grantsOf(organizationId)) {
        expect(granted.role, `${organizationId}: ${granted.userId}`).not.toBe(roles.get(granted.userId));
        if (roles.get(granted.userId) === "owner") ownersDemoted += 1;
        roles.set(granted.userId, granted.role);
      }
      expect(ownersDemoted, organizationId).toBe(1);
    }
  }, 120_000);

  it("given two owners, when each demotes the other at the same moment through another gateway, then one owner stays", async () => {
    for (let trial = 0; trial < 10; trial++) {
      const organizationId = `org-mutual-${trial}`;
      const tokens = await organization(organizationId, { b: "owner" });
      const [a, b] = [`${organizationId}-a`, `${organizationId}-b`];
      const replies = await Promise.all([
        grant(first, tokens[a]!, b, "member"),
        grant(second, tokens[b]!, a, "member"),
      ]);
      expect(replies.map((reply) => reply.status).sort()).toEqual([200, 403]);
      expect(await ownersOf(organizationId)).toHaveLength(1);
    }
  }, 120_000);

  it("given the only owner, when it steps down while making another owner, then the organization never has no owner", async () => {
    for (let trial = 0; trial < 10; trial++) {
      const organizationId = `org-handover-${trial}`;
      const tokens = await organization(organizationId, { b: "admin" });
      const [a, b] = [`${organizationId}-a`, `${organizationId}-b`];
      const [stepDown, handOver] = await Promise.all([
        grant(gatewayOf(trial), tokens[a]!, a, "admin"),
        grant(gatewayOf(trial + 1), tokens[a]!, b, "owner"),
      ]);
      expect(handOver.status).toBe(200);
      const owners = await ownersOf(organizationId);
      expect(owners.length).toBeGreaterThanOrEqual(1);
      expect(owners).toEqual(stepDown.status === 200 ? [b] : [a, b]);
    }
  }, 120_000);

  it("given an admin granting roles while an owner demotes them through the other gateway, then no grant of theirs lands after their demotion", async () => {
    for (let trial = 0; trial < 5; trial++) {
      const organizationId = `org-demoted-granter-${trial}`;
      const tokens = await organization(organizationId, { b: "admin" });
      const [a, b] = [`${organizationId}-a`, `${organizationId}-b`];
      await Promise.all([
        ...Array.from({ length: 10 }, (_, index) =>
          grant(gatewayOf(index), tokens[b]!, `${organizationId}-new-${index}`, "admin"),
        ),
        grant(gatewayOf(trial + 1), tokens[a]!, b, "member"),
      ]);
      const grants = await grantsOf(organizationId);
      const demotion = grants.findIndex((granted) => granted.userId === b && granted.role === "member");
      expect(demotion).toBeGreaterThan(0);
      expect(grants.slice(demotion).filter((granted) => granted.actor === `user:${b}`)).toEqual([]);
    }
  }, 120_000);

  it.each(["key limits", "key defaults", "key limits and key defaults"])(
    "given an admin changing %s while an owner demotes them through the other gateway, then no change of theirs is decided after their demotion",
    async (changes) => {
      for (let trial = 0; trial < 4; trial++) {
        const organizationId = `org-demoted-${changes.replaceAll(" ", "-")}-${trial}`;
        const tokens = await organization(organizationId, { b: "admin" });
        const [owner, admin] = [tokens[`${organizationId}-a`]!, tokens[`${organizationId}-b`]!];
        const key = await first.issueKey(owner, { isOrganization: true });
        const change = (index: number) => {
          const limits = changes === "key limits" || (changes !== "key defaults" && index % 2 === 0);
          return limits
            ? call(gatewayOf(index >> 1), "PUT", `/llm/apis/${key.uuid}/limits`, admin, {
                monthlySpendLimitWon: String(index + 1),
              })
            : call(gatewayOf(index >> 1), "PUT", "/llm/organization/key-defaults", admin, {
                allowedModels: index % 4 < 2 ? null : ["alpha"],
              });
        };
        const replies = await Promise.all([
          ...Array.from({ length: 10 }, (_, index) => change(index)),
          grant(gatewayOf(trial), owner, `${organizationId}-b`, "member"),
        ]);
        for (const reply of replies) expect([200, 403], JSON.stringify(reply.body)).toContain(reply.status);
        const log = await roleLogOf(first.service.ledger.pool, [
          `organization-${organizationId}`,
          `apikey-${key.uuid}`,
        ]);
        const demotion = log.findIndex(
          (event) => event.type === "OrganizationRoleGranted" && event.role === "member",
        );
        expect(demotion).toBeGreaterThan(0);
        const byAdmin = (event: { actor: string }) => event.actor === `user:${organizationId}-b`;
        // Key defaults share the organization's stream with the grants: decided at its version, none follows
        // the demotion. A key's limits are another stream, and the log orders transactions by their first
        // write: a change decided while the demotion was committing can follow it. Each change names the
        // organization's version its author's role was read through, which must come before the demotion's.
        expect(
          log
            .slice(demotion)
            .filter(byAdmin)
            .filter((event) => event.type !== "ApiKeyLimitsSet"),
          organizationId,
        ).toEqual([]);
        const demotedAt = log[demotion]!.stream_version;
        for (const change of log.filter(byAdmin)) {
          expect(change.organization_version, JSON.stringify(change)).not.toBeNull();
          expect(change.organization_version!, JSON.stringify(change)).toBeLessThan(demotedAt);
        }
        // A change refused appended nothing: the admin's changes in the log are those answered 200.
        const served = replies.slice(0, -1).filter((reply) => reply.status === 200);
        expect(log.filter(byAdmin)).toHaveLength(served.length);
      }
    },
    120_000,
  );

  /**
   * An admin's changes held up while an owner demotes them through the other gateway: `hold` takes, on its
   * own connection, what a slow commit would hold (a row, a lock), so that the admin's first change stops
   * inside its work and the next ones wait behind it in the same gateway; the demotion lands meanwhile, then
   * the hold goes. The replies, and the organization's log with `streams` merged in the log's order.
   */
  async function demotedWhileHeld(options: {
    organizationId: string;
    admin: string;
    owner: string;
    hold: (client: pg.Client) => Promise<void>;
    change: (index: number) => Promise<JsonReply>;
    streams: string[];
  }) {
    const { organizationId } = options;
    const pool = first.service.ledger.pool;
    const until = async (condition: () => Promise<boolean>, what: string) => {
      for (let attempt = 0; attempt < 200; attempt++) {
        if (await condition()) return;
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      throw new Error(`${what} never happened`);
    };
    const waitingOnALock = async () =>
      Number(
        (
          await pool.query(
            `SELECT count(*) AS count FROM pg_stat_activity
             WHERE datname = current_database() AND wait_event_type = 'Lock'`,
          )
        ).rows[0].count,
      ) > 0;
    const holder = new pg.Client({ connectionString: first.database.url });
    await holder.connect();
    let changes: Promise<JsonReply>[] = [];
    let demotion: Promise<JsonReply> | undefined;
    try {
      await holder.query("BEGIN");
      await options.hold(holder);
      let settled = false;
      changes = [options.change(0).finally(() => (settled = true))];
      await until(async () => settled || (await waitingOnALock()), "the admin's first change held");
      changes.push(...[1, 2, 3, 4].map((index) => options.change(index)));
      await new Promise((resolve) => setTimeout(resolve, 200));
      demotion = grant(second, options.owner, options.admin, "member");
      await until(
        async () =>
          (
            await pool.query(
              `SELECT 1 FROM ledger_events WHERE stream_id = $1 AND type = 'OrganizationRoleGranted'
               AND data->>'role' = 'member'`,
              [`organization-${organizationId}`],
            )
          ).rowCount === 1,
        "the demotion's event",
      );
    } finally {
      await holder.query("ROLLBACK");
      await holder.end();
    }
    const replies = await Promise.all(changes);
    expect((await demotion!).status).toBe(200);
    const log = await roleLogOf(pool, [`organization-${organizationId}`, ...options.streams]);
    const demoted = log.findIndex(
      (event) => event.type === "OrganizationRoleGranted" && event.role === "member",
    );
    const byAdmin = log.filter((event) => event.actor === `user:${options.admin}`);
    // Each change names the organization's version its author's role was read through: before the demotion.
    for (const change of byAdmin)
      expect(change.organization_version ?? Number.POSITIVE_INFINITY, JSON.stringify(change)).toBeLessThan(
        log[demoted]!.stream_version,
      );
    const late = log.slice(demoted).filter((event) => event.actor === `user:${options.admin}`);
    return { replies, late };
  }

  it("given an admin's limit changes waiting their turn on a key while an owner demotes them, then those still waiting are refused once the demotion is in the log", async () => {
    const organizationId = "org-queued-limits";
    const tokens = await organization(organizationId, { b: "admin" });
    const [owner, admin] = [tokens[`${organizationId}-a`]!, tokens[`${organizationId}-b`]!];
    const key = await first.issueKey(owner, { isOrganization: true });
    const setLimits = (token: string, won: string) =>
      call(first, "PUT", `/llm/apis/${key.uuid}/limits`, token, { monthlySpendLimitWon: won });
    expect((await setLimits(owner, "1")).status).toBe(200);

    // The key's limits row locked: the first change stops inside its append, holding the key's turn.
    const { replies, late } = await demotedWhileHeld({
      organizationId,
      owner,
      admin: `${organizationId}-b`,
      hold: async (client) => {
        await client.query("SELECT 1 FROM key_limits WHERE key_id = $1 FOR UPDATE", [key.uuid]);
      },
      change: (index) => setLimits(admin, String(index + 2)),
      streams: [`apikey-${key.uuid}`],
    });

    // The change already appending when the demotion landed went first in the log (its transaction began
    // first); those still waiting for the key were decided after it, as a member's.
    expect(replies[0]!.status).toBe(200);
    for (const reply of replies.slice(1)) expectRefused(reply, "a change waiting its turn");
    expect(late).toEqual([]);
  }, 60_000);

  it("given an admin's key defaults appending slowly while an owner demotes them, then none lands after the demotion", async () => {
    const organizationId = "org-slow-defaults";
    const tokens = await organization(organizationId, { b: "admin" });
    const [owner, admin] = [tokens[`${organizationId}-a`]!, tokens[`${organizationId}-b`]!];

    // The organization's stream's lock for appends of any version, which such an append waits for when its
    // first try found it taken. Defaults decided at the stream's version never take it.
    const { late } = await demotedWhileHeld({
      organizationId,
      owner,
      admin: `${organizationId}-b`,
      hold: async (client) => {
        await client.query("SELECT pg_advisory_xact_lock($1::int, hashtext($2))", [
          advisoryLockKeys.anyVersionAppends,
          `organization-${organizationId}`,
        ]);
      },
      change: (index) =>
        call(first, "PUT", "/llm/organization/key-defaults", admin, {
          allowedModels: index % 2 === 0 ? ["alpha"] : null,
        }),
      streams: [],
    });

    expect(late).toEqual([]);
  }, 60_000);

  it("given an admin's webhooks waiting their turn on the organization while an owner demotes them, then those still waiting are refused", async () => {
    const organizationId = "org-queued-webhooks";
    const tokens = await organization(organizationId, { b: "admin" });
    const [owner, admin] = [tokens[`${organizationId}-a`]!, tokens[`${organizationId}-b`]!];

    // The webhooks' secrets locked: the first add stops inside its turn, the next ones wait for the turn.
    const { replies, late } = await demotedWhileHeld({
      organizationId,
      owner,
      admin: `${organizationId}-b`,
      hold: async (client) => {
        await client.query("LOCK TABLE webhook_secrets IN EXCLUSIVE MODE");
      },
      change: (index) =>
        call(first, "POST", "/llm/webhooks", admin, {
          url: `http://127.0.0.1:9/hook-${index}`,
          events: ["balance.low"],
          isOrganization: true,
        }),
      streams: [],
    });

    expect(replies[0]!.status).toBe(201);
    for (const reply of replies.slice(1)) expectRefused(reply, "an add waiting its turn");
    const added = await call(first, "GET", "/llm/webhooks?isOrganization=true", owner);
    expect(added.body.data).toHaveLength(1);
    expect(late).toEqual([]);
  }, 60_000);

  it("given an admin's alert thresholds and webhook removals appending slowly while an owner demotes them, then none lands after the demotion", async () => {
    const organizationId = "org-slow-alerts";
    const tokens = await organization(organizationId, { b: "admin" });
    const [owner, admin] = [tokens[`${organizationId}-a`]!, tokens[`${organizationId}-b`]!];
    const hooks: string[] = [];
    for (let index = 0; index < 3; index++) {
      const added = await call(first, "POST", "/llm/webhooks", owner, {
        url: `http://127.0.0.1:9/kept-${index}`,
        events: ["balance.low"],
        isOrganization: true,
      });
      hooks.push(added.body.id as string);
    }
    const alertsStream = `alerts-organization-${organizationId}`;
    const webhookStreams = hooks.map((id) => `webhook-${id}`);

    // Each stream's lock for appends of any version, which such an append waits for when its first try
    // found it taken. Changes decided at their stream's version never take it.
    const { late } = await demotedWhileHeld({
      organizationId,
      owner,
      admin: `${organizationId}-b`,
      hold: async (client) => {
        for (const stream of [alertsStream, ...webhookStreams])
          await client.query("SELECT pg_advisory_xact_lock($1::int, hashtext($2))", [
            advisoryLockKeys.anyVersionAppends,
            stream,
          ]);
      },
      change: (index) =>
        index < 2
          ? call(first, "PUT", "/llm/alerts", admin, {
              isOrganization: true,
              balanceBelowWon: String(index + 1),
            })
          : call(first, "DELETE", `/llm/webhooks/${hooks[index - 2]!}`, admin),
      streams: [alertsStream, ...webhookStreams],
    });

    expect(late).toEqual([]);
    const listed = await call(first, "GET", "/llm/webhooks?isOrganization=true", owner);
    const removed = await first.service.ledger.pool.query(
      "SELECT count(*) AS count FROM ledger_events WHERE type = 'WebhookEndpointRemoved' AND stream_id = ANY($1)",
      [webhookStreams],
    );
    expect((listed.body.data as unknown[]).length).toBe(hooks.length - Number(removed.rows[0].count));
  }, 60_000);

  it("given an organization nobody has seen, when several users first appear in it at once through both gateways and several routes, then exactly one is its owner", async () => {
    const firstRequests: ((gateway: GatewayHarness, token: string) => Promise<JsonReply>)[] = [
      (gateway, token) => call(gateway, "GET", "/llm/organization/members", token),
      (gateway, token) => call(gateway, "POST", "/llm/apis", token, { name: "first", isOrganization: true }),
      (gateway, token) => call(gateway, "GET", "/llm/alerts?isOrganization=true", token),
      (gateway, token) => call(gateway, "GET", "/llm/usage/activity?isOrganization=true", token),
      (gateway, token) =>
        call(gateway, "PUT", "/llm/organization/key-defaults", token, { allowedModels: null }),
      (gateway, token) => call(gateway, "GET", "/llm/apis?isOrganization=true", token),
    ];
    for (let trial = 0; trial < 10; trial++) {
      const organizationId = `org-newborn-${trial}`;
      const users = firstRequests.map((_, index) => `${organizationId}-user-${index}`);
      const tokens = await Promise.all(users.map((userId) => first.session(userId, organizationId)));

      const replies = await Promise.all(
        firstRequests.map((request, index) => request(gatewayOf(index + trial), tokens[index]!)),
      );

      for (const reply of replies)
        expect([200, 201, 403], JSON.stringify(reply.body)).toContain(reply.status);
      const owners = await ownersOf(organizationId);
      expect(owners, organizationId).toHaveLength(1);
      expect(await grantsOf(organizationId)).toEqual([
        expect.objectContaining({ userId: owners[0], role: "owner", actor: "system:organization-roles" }),
      ]);
      // Each user's own view agrees with the list: the owner is owner, everyone else a member.
      for (const [index, userId] of users.entries()) {
        const seen = await call(first, "GET", "/llm/organization/members", tokens[index]!);
        expect(seen.body.you, userId).toMatchObject({ role: userId === owners[0] ? "owner" : "member" });
      }
    }
  }, 120_000);

  it("given two users' first sign-ins to a new organization with the provider's role claim configured, then one owner is granted", async () => {
    const withClaims = await startGatewayHarness({ database: first.database, service: { oidc } });
    try {
      for (let trial = 0; trial < 5; trial++) {
        const organizationId = `org-claimed-newborn-${trial}`;
        const [x, y] = await Promise.all(
          ["x", "y"].map(
            async (suffix) =>
              (
                await withClaims.service.sessions.mint(
                  { userId: `${organizationId}-${suffix}`, organizationId, providerRole: "member" },
                  3_600,
                )
              ).token,
          ),
        );
        const replies = await Promise.all([
          call(withClaims, "GET", "/llm/organization/members", x!),
          call(first, "GET", "/llm/organization/members", y!),
        ]);
        expect(replies.map((reply) => reply.status)).toEqual([200, 200]);
        expect(await ownersOf(organizationId)).toHaveLength(1);
        expect(await grantsOf(organizationId)).toHaveLength(1);
      }
    } finally {
      await withClaims.close();
    }
  }, 120_000);

  it("given the same grant sent twenty times at once to both gateways, then it is recorded once", async () => {
    const organizationId = "org-same-grant";
    const tokens = await organization(organizationId, { b: "admin" });
    const owner = `${organizationId}-a`;
    const replies = await Promise.all(
      Array.from({ length: 20 }, (_, index) =>
        grant(gatewayOf(index), tokens[owner]!, `${organizationId}-c`, "admin"),
      ),
    );
    expect(replies.map((reply) => reply.status)).toEqual(replies.map(() => 200));
    expect((await grantsOf(organizationId)).filter((granted) => granted.userId.endsWith("-c"))).toHaveLength(
      1,
    );
  }, 60_000);

  it("given sixty key defaults and sixty grants sent at once through both gateways, then each answers 200: on the organization's stream they take turns", async () => {
    const organizationId = "org-defaults-and-grants";
    const tokens = await organization(organizationId, {});
    const owner = tokens[`${organizationId}-a`]!;
    const replies = await Promise.all(
      Array.from({ length: 120 }, (_, index) =>
        index % 2 === 0
          ? grant(gatewayOf(index >> 1), owner, `${organizationId}-${index}`, "admin")
          : call(gatewayOf(index >> 1), "PUT", "/llm/organization/key-defaults", owner, {
              allowedModels: index % 3 === 0 ? null : ["alpha"],
            }),
      ),
    );
    expect(replies.filter((reply) => reply.status !== 200).map((reply) => reply.body)).toEqual([]);
    expect(await grantsOf(organizationId)).toHaveLength(61);
  }, 120_000);

  it("an admin may not make owners, change an owner's role, or raise themselves; a member may grant nothing", async () => {
    const organizationId = "org-escalate";
    const tokens = await organization(organizationId, { b: "admin", c: "member" });
    const [a, b, c] = ["a", "b", "c"].map((suffix) => `${organizationId}-${suffix}`) as [
      string,
      string,
      string,
    ];
    const before = await grantsOf(organizationId);
    for (const gateway of [first, second]) {
      expectRefused(await grant(gateway, tokens[b]!, b, "owner"), "admin raises self to owner");
      expectRefused(await grant(gateway, tokens[b]!, c, "owner"), "admin makes a member owner");
      expectRefused(await grant(gateway, tokens[b]!, "stranger", "owner"), "admin makes a stranger owner");
      expectRefused(await grant(gateway, tokens[b]!, a, "admin"), "admin demotes the owner to admin");
      expectRefused(await grant(gateway, tokens[b]!, a, "member"), "admin demotes the owner to member");
      expectRefused(await grant(gateway, tokens[b]!, a, "owner"), "admin grants the owner owner");
      expectRefused(await grant(gateway, tokens[c]!, c, "admin"), "member raises self to admin");
      expectRefused(await grant(gateway, tokens[c]!, c, "owner"), "member raises self to owner");
      expectRefused(await grant(gateway, tokens[c]!, c, "member"), "member grants self member");
      expectRefused(await grant(gateway, tokens[c]!, b, "member"), "member demotes an admin");
      expectRefused(await grant(gateway, tokens[c]!, "stranger", "member"), "member grants a stranger");
    }
    expect(await grantsOf(organizationId)).toEqual(before);
    // What an admin may: grant admin and member to non-owners, themselves included (stepping down).
    expect(await grant(second, tokens[b]!, c, "admin")).toMatchObject({ status: 200 });
    expect(await grant(second, tokens[b]!, b, "member")).toMatchObject({
      status: 200,
      body: { role: "member" },
    });
    expectRefused(await grant(second, tokens[b]!, b, "admin"), "an admin stepped down stays down");
  }, 60_000);

  it("every route reserved to owners and admins refuses a member 403/160 and appends nothing; GET and PUT of alerts alike", async () => {
    const organizationId = "org-guarded";
    const tokens = await organization(organizationId, { b: "admin", c: "member" });
    const [owner, admin, member] = ["a", "b", "c"].map(
      (suffix) => tokens[`${organizationId}-${suffix}`]!,
    ) as [string, string, string];
    const key = await first.issueKey(owner, { isOrganization: true });
    const hook = await call(first, "POST", "/llm/webhooks", admin, {
      url: "http://127.0.0.1:9/hook",
      events: ["balance.low"],
      isOrganization: true,
    });
    expect(hook.status, JSON.stringify(hook.body)).toBe(201);
    const hookId = hook.body.id as string;
    const reserved: [string, string, unknown?][] = [
      ["PUT", `/llm/apis/${key.uuid}/limits`, { monthlySpendLimitWon: "5" }],
      ["PUT", `/llm/apis/${key.uuid}/limits`, { allowedModels: ["alpha-5.4-mini"] }],
      ["DELETE", `/llm/apis/${key.uuid}/limits`],
      ["PUT", "/llm/organization/key-defaults", { allowedModels: null }],
      ["PUT", "/llm/alerts", { isOrganization: true, balanceBelowWon: "10" }],
      ["GET", "/llm/alerts?isOrganization=true"],
      [
        "POST",
        "/llm/webhooks",
        { url: "http://127.0.0.1:9/x", events: ["balance.low"], isOrganization: true },
      ],
      ["GET", "/llm/webhooks?isOrganization=true"],
      ["GET", `/llm/webhooks/${hookId}/deliveries`],
      ["POST", `/llm/webhooks/${hookId}/test`],
      ["PUT", `/llm/organization/members/${organizationId}-c`, { role: "member" }],
      ["DELETE", `/llm/webhooks/${hookId}`],
    ];
    const events = async () =>
      Number((await first.service.ledger.pool.query("SELECT count(*) FROM ledger_events")).rows[0].count);
    const outbox = async () =>
      Number(
        (
          await first.service.ledger.pool.query(
            "SELECT count(*) FROM webhook_deliveries WHERE webhook_id = $1",
            [hookId],
          )
        ).rows[0].count,
      );
    const [eventsBefore, outboxBefore] = [await events(), await outbox()];
    for (const [method, path, body] of reserved)
      for (const gateway of [first, second])
        expectRefused(await call(gateway, method, path, member, body), `member ${method} ${path}`);
    expect(await events()).toBe(eventsBefore);
    expect(await outbox()).toBe(outboxBefore);
    // The same routes serve an owner and an admin; the admin removes the webhook last.
    for (const [method, path, body] of reserved.slice(0, -1)) {
      for (const [who, token] of [
        ["owner", owner],
        ["admin", admin],
      ] as const) {
        const reply = await call(second, method, path, token, body);
        expect([200, 201, 202], `${who} ${method} ${path}: ${JSON.stringify(reply.body)}`).toContain(
          reply.status,
        );
      }
    }
    expect((await call(first, "DELETE", `/llm/webhooks/${hookId}`, admin)).status).toBe(200);
  }, 60_000);

  it("given an admin's session, when an owner demotes them through the other gateway, then that same session is refused at once", async () => {
    const organizationId = "org-demoted-session";
    const tokens = await organization(organizationId, { b: "admin" });
    const [owner, admin] = [tokens[`${organizationId}-a`]!, tokens[`${organizationId}-b`]!];
    const key = await first.issueKey(owner, { isOrganization: true });
    const setLimits = (gateway: GatewayHarness) =>
      call(gateway, "PUT", `/llm/apis/${key.uuid}/limits`, admin, { monthlySpendLimitWon: "7" });
    expect((await setLimits(first)).status).toBe(200);
    expect((await setLimits(second)).status).toBe(200);
    const hook = await call(second, "POST", "/llm/webhooks", admin, {
      url: "http://127.0.0.1:9/hook",
      events: ["balance.low"],
      isOrganization: true,
    });
    expect(hook.status).toBe(201);

    expect((await grant(first, owner, `${organizationId}-b`, "member")).status).toBe(200);

    for (const gateway of [second, first]) {
      expectRefused(await setLimits(gateway), "demoted admin sets limits");
      expectRefused(
        await call(gateway, "GET", `/llm/webhooks/${hook.body.id as string}/deliveries`, admin),
        "demoted admin reads deliveries",
      );
      expectRefused(
        await grant(gateway, admin, `${organizationId}-x`, "member"),
        "demoted admin grants a role",
      );
    }
    // And promoted again, the same session may at once.
    expect((await grant(first, owner, `${organizationId}-b`, "admin")).status).toBe(200);
    expect((await setLimits(second)).status).toBe(200);
  }, 60_000);

  it("with the provider's role claim configured: the claim decides the session's role over any grant, and grants still keep one owner", async () => {
    const withClaims = await startGatewayHarness({ database: first.database, service: { oidc } });
    try {
      const organizationId = "org-claims-vs-grants";
      const tokens = await organization(organizationId, { b: "member" });
      const [a, b] = [`${organizationId}-a`, `${organizationId}-b`];
      const claimed = async (userId: string, providerRole: string) =>
        (await withClaims.service.sessions.mint({ userId, organizationId, providerRole }, 3_600)).token;
      const setDefaults = (token: string) =>
        call(withClaims, "PUT", "/llm/organization/key-defaults", token, { allowedModels: null });

      // A grant contradicting the claim is recorded; the claim still decides what a claimed session may.
      expect((await grant(first, tokens[a]!, b, "admin")).status).toBe(200);
      const bAsMember = await claimed(b, "member");
      expectRefused(await setDefaults(bAsMember), "claimed member granted admin");
      const seen = await call(withClaims, "GET", "/llm/organization/members", bAsMember);
      expect(seen.body.you).toMatchObject({ role: "member" });

      // The only granted owner, whom the provider calls a member, acts as a member and cannot step down.
      const aAsMember = await claimed(a, "member");
      expectRefused(await setDefaults(aAsMember), "claimed member granted owner");
      expectRefused(await grant(withClaims, aAsMember, a, "admin"), "claimed member steps down");

      // A claimed owner granted nothing makes owners; demoting the last granted owner is refused.
      const cAsOwner = await claimed(`${organizationId}-c`, "owner");
      const demoteA = () => grant(withClaims, cAsOwner, a, "member");
      const lastOwner = await demoteA();
      expectRefused(lastOwner, "claimed owner demotes the last granted owner");
      expect(lastOwner.body.message).toMatch(/last owner/);
      expect((await grant(withClaims, cAsOwner, `${organizationId}-c`, "owner")).status).toBe(200);
      expect((await demoteA()).status).toBe(200);
      expect(await ownersOf(organizationId)).toEqual([`${organizationId}-c`]);

      // A claimed admin may not raise themselves.
      const dAsAdmin = await claimed(`${organizationId}-d`, "admin");
      expectRefused(await grant(withClaims, dAsAdmin, `${organizationId}-d`, "owner"), "claimed admin");
    } finally {
      await withClaims.close();
    }
  }, 60_000);

  it("given all of the above, then every grant is an event with its actor and time, and a rebuild leaves the members as they were", async () => {
    const grants = await first.service.ledger.pool.query<{ actor: string | null; occurred: string | null }>(
      `SELECT metadata->>'actor' AS actor, metadata->>'occurredAt' AS occurred
       FROM ledger_events WHERE type = 'OrganizationRoleGranted'`,
    );
    expect(grants.rows.length).toBeGreaterThan(50);
    for (const row of grants.rows) {
      expect(row.actor).toMatch(/^(user:|system:organization-roles$)/);
      expect(Number.isNaN(Date.parse(row.occurred ?? ""))).toBe(false);
    }
    const everyMember = async () =>
      (
        await first.service.ledger.pool.query(
          `SELECT organization_id, user_id, role, member_since FROM projection_organization_members
           ORDER BY organization_id, user_id`,
        )
      ).rows;
    const before = await everyMember();
    const context = {
      pool: first.service.ledger.pool,
      store: first.service.ledger.store,
      projections: allProjections,
    };
    expect(await verifyProjections(context)).toEqual([]);
    await rebuildProjections(context, { batchSizeMax: 1_000, chunkEventsMax: 7 });
    expect(await everyMember()).toEqual(before);
    await rebuildProjections(context, { batchSizeMax: 5, fold: "memory" });
    expect(await everyMember()).toEqual(before);
    expect(await verifyProjections(context)).toEqual([]);
  }, 120_000);
});

/** The events of `streams` in the log's order: who made each, a grant's role, and what a change was decided on. */
async function roleLogOf(pool: pg.Pool, streams: string[]) {
  const result = await pool.query<{
    type: string;
    actor: string;
    role: string | null;
    stream_version: number;
    organization_version: number | null;
  }>(
    `SELECT type, metadata->>'actor' AS actor, data->>'role' AS role, stream_version,
            (metadata->>'organizationVersion')::int AS organization_version
     FROM ledger_events WHERE stream_id = ANY($1::text[]) ORDER BY transaction_order, position`,
    [streams],
  );
  return result.rows;
}
