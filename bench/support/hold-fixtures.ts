import { randomUUID } from "node:crypto";
import type pg from "pg";
import { activeKeysTable } from "../../projections/active-keys";
import type { UsageAuthorizationRequest } from "../../src/billing/holds/usage-authorizations";
import type { AccountReference, EventData } from "../../src/ledger/events";
import { createTableStatements } from "../../src/ledger/projection/projection-tables";

/** Holds and usages as the gateway asks for them, for the benchmarks of the hold statement and the log writer. */

let requestCounter = 0;

/** A hold as the gateway asks for it: its request's row, and the `UsageAuthorized` it keeps without its holdWon. */
export function benchAuthorizationRequest(
  keyId: string,
  account: AccountReference,
): UsageAuthorizationRequest {
  requestCounter += 1;
  const requestId = `req_hold_bench_${requestCounter}_${randomUUID()}`;
  const startedAt = new Date().toISOString();
  return {
    eventId: randomUUID(),
    data: {
      requestId,
      keyId,
      account,
      userId: account.id,
      organizationId: null,
      model: "alpha-5.4-mini",
      endpoint: "chat.completions",
      streamed: false,
      startedAt,
      estimate: { inputTokensMax: 1_000, outputTokensMax: 1_000, estimatedWon: "0.01" },
      gatewayInstance: "gateway-hold-bench",
      expiresAt: new Date(Date.now() + 600_000).toISOString(),
    },
  };
}

/** The usage a gateway records for such a hold: a short answer, the upstream's count. */
export function benchUsageOf(hold: UsageAuthorizationRequest): {
  type: "UsageRecorded";
  data: EventData<"UsageRecorded">;
  metadata: { actor: string; correlationId: string; occurredAt: string };
} {
  const { requestId, keyId, account, userId, organizationId, model, endpoint, streamed, startedAt } =
    hold.data;
  return {
    type: "UsageRecorded",
    data: {
      requestId,
      keyId,
      account,
      userId,
      organizationId,
      model,
      endpoint,
      streamed,
      outcome: "completed",
      tokens: { input: 14, cached: null, output: 18, reasoning: 0 },
      usageSource: "upstream",
      startedAt,
      heldWon: hold.data.estimate.estimatedWon,
      pendingWon: "0.0104",
      attempts: [{ endpoint: "primary", model, status: 200, error: null, durationMs: 3 }],
    },
    metadata: { actor: `key:${keyId}`, correlationId: requestId, occurredAt: new Date().toISOString() },
  };
}

/** The backend serving a client (or a pool of one connection). */
export async function backendPidOf(client: Pick<pg.Pool, "query">): Promise<number> {
  const result = await client.query<{ pid: number }>("SELECT pg_backend_pid() AS pid");
  return result.rows[0]!.pid;
}

/**
 * A hold is granted only to an active key: the bench's key in the active-keys projection, as its issuance
 * leaves it, without the projection runner (the benches open a ledger, not a service).
 */
export async function activateBenchKey(
  client: Pick<pg.Pool, "query">,
  keyId: string,
  account: AccountReference,
): Promise<void> {
  for (const statement of createTableStatements(activeKeysTable)) await client.query(statement);
  await client.query(
    `INSERT INTO ${activeKeysTable.name} (key_id, key_hash, owner_kind, owner_id, issued_by_user_id, status)
     VALUES ($1, $2, $3, $4, $4, 1)`,
    [keyId, `bench-${keyId}`, account.kind, account.id],
  );
}
