import { randomUUID } from "node:crypto";
import type pg from "pg";
import { PostgresUsageAuthorizations } from "../../src/billing/holds/postgres-usage-authorizations";
import type { UsageAuthorizationRequest } from "../../src/billing/holds/usage-authorizations";
import type { EventStore } from "../../src/ledger/store/event-store";
import { PostgresEventStore } from "../../src/ledger/store/postgres-event-store";

/**
 * The holds port on a test's ledger, as the service wires it (service.ts), for keys a test makes up: a hold
 * is refused for a key the active-keys projection does not hold active, so while the holds are decided each
 * request's key not in it stands there as an issued, active key would (`withKeysActive`).
 */
export function usageAuthorizationsOf(
  pool: Pick<pg.Pool, "query">,
  store: EventStore,
): Pick<PostgresUsageAuthorizations, "authorizeUsage"> {
  if (!(store instanceof PostgresEventStore)) throw new Error("holds need the PostgreSQL event store");
  const authorizations = new PostgresUsageAuthorizations(pool);
  return {
    authorizeUsage: (requests, commit) =>
      withKeysActive(pool, requests, () => authorizations.authorizeUsage(requests, commit)),
  };
}

/**
 * Runs `decide` with each request's key in the active-keys projection as an issued, active key of its
 * account, then removes the rows it added: the projection stays a fold of the log (`ledger verify`), and a
 * key a test entered itself (deactivated, say) is left as it is. The hash is made up: no test presents it.
 */
export async function withKeysActive<Result>(
  pool: Pick<pg.Pool, "query">,
  requests: readonly Pick<UsageAuthorizationRequest, "data">[],
  decide: () => Promise<Result>,
): Promise<Result> {
  const added = await pool.query<{ key_id: string }>(
    `INSERT INTO projection_active_keys (key_id, key_hash, owner_kind, owner_id, issued_by_user_id, status)
     SELECT DISTINCT key.key_id, 'test-key-' || key.key_id, key.owner_kind, key.owner_id, key.owner_id, 1
     FROM json_to_recordset($1::json) AS key(key_id text, owner_kind text, owner_id text)
     ON CONFLICT (key_id) DO NOTHING
     RETURNING key_id`,
    [
      JSON.stringify(
        requests.map(({ data }) => ({
          key_id: data.keyId,
          owner_kind: data.account.kind,
          owner_id: data.account.id,
        })),
      ),
    ],
  );
  try {
    return await decide();
  } finally {
    await pool.query("DELETE FROM projection_active_keys WHERE key_id = ANY($1::text[])", [
      added.rows.map((row) => row.key_id),
    ]);
  }
}

/**
 * A hold as a gateway asks for it on a personal account: a JSON chat request of `alpha-5.4-mini`, its
 * authorization's fields as `ledger_authorize_usage` takes them; `data` overrides any of them.
 */
export function personalHoldRequest(
  requestId: string,
  userId: string,
  data: Partial<UsageAuthorizationRequest["data"]> = {},
): UsageAuthorizationRequest {
  const startedAt = new Date();
  return {
    eventId: randomUUID(),
    data: {
      requestId,
      keyId: randomUUID(),
      account: { kind: "user", id: userId },
      userId,
      organizationId: null,
      model: "alpha-5.4-mini",
      endpoint: "chat.completions",
      streamed: false,
      startedAt: startedAt.toISOString(),
      estimate: { inputTokensMax: 1_000, outputTokensMax: 100, estimatedWon: "1" },
      gatewayInstance: "gateway-test",
      expiresAt: new Date(startedAt.getTime() + 600_000).toISOString(),
      ...data,
    },
  };
}
