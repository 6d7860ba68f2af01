import type pg from "pg";
import { assert } from "../../kernel/assert";
import { assertHoldWithinFunds, assertRefusedForFunds } from "../money-invariants";
import type {
  UsageAuthorizationDecision,
  UsageAuthorizationRequest,
  UsageAuthorizations,
  UsageRefusalReason,
} from "./usage-authorizations";

/**
 * Holds behind their own port (C10): `UsageAuthorizations` (usage-authorizations.ts) is billing's, and this
 * is its PostgreSQL implementation. It calls `ledger_authorize_usage` (declared in
 * src/ledger/schema/holds/ledger-authorize-usage.ts), which decides against the inline funds and key limits
 * and appends the granted holds' `UsageAuthorized` to the log in the same statement. It needs the log in the
 * same PostgreSQL database, so the service runs on the PostgreSQL event store (EventStoreDB cannot take part
 * in that transaction: main.ts refuses it for the service's roles).
 */

export class PostgresUsageAuthorizations implements UsageAuthorizations {
  constructor(
    private readonly pool: Pick<pg.Pool, "query">,
    /** The PostgreSQL event store's `appendsBeside`. */
    private readonly log: { transactionOrderOffset: bigint; committed(): void },
  ) {}

  /**
   * Places holds (C10): each request's `UsageAuthorized` is appended as its usage stream's first event if
   * the account has at least ₩1 available, in one statement for the whole batch (`ledger_authorize_usage`).
   */
  async authorizeUsage(
    requests: readonly UsageAuthorizationRequest[],
    commit: { waitForFlush: boolean } = { waitForFlush: true },
  ): Promise<UsageAuthorizationDecision[]> {
    if (requests.length === 0) return [];
    const result = await this.pool.query<AuthorizationRow>({
      name: "ledger-authorize-usage",
      // The statement is its own transaction, so a transaction-local setting made in it governs its commit.
      // Holds whose answer waits for a later synchronous commit need not wait for this one's flush: the
      // WAL is flushed in order, so that later commit makes them durable too (see HoldAuthorizer).
      text: `SELECT authorized.* FROM ledger_authorize_usage($1::json, $2) authorized,
               (SELECT set_config('synchronous_commit', $3, true)) commit_setting`,
      values: [
        JSON.stringify(
          requests.map((request, ordinal) => ({
            ordinal,
            event_id: request.eventId,
            stream_id: request.streamId,
            account_kind: request.event.data.account.kind,
            account_id: request.event.data.account.id,
            estimate_won: request.event.data.estimate.estimatedWon,
            key_id: request.event.data.keyId,
            started_at: request.event.data.startedAt,
            data: request.event.data,
            metadata: request.event.metadata,
          })),
        ),
        this.log.transactionOrderOffset,
        commit.waitForFlush ? "on" : "off",
      ],
    });
    if (result.rows.some((row) => row.hold_won !== null)) this.log.committed();
    // Decisions are matched to requests by place: one row per request, in order, or a hold goes to another.
    assert(
      result.rows.length === requests.length && result.rows.every((row, index) => row.ordinal === index),
      `ledger_authorize_usage answered ${result.rows.length} rows out of order for ${requests.length} requests`,
    );
    return result.rows.map((row, index) => decisionOf(row, requests[index] as UsageAuthorizationRequest));
  }
}

interface AuthorizationRow {
  ordinal: number;
  hold_won: string | null;
  available_won: string;
  transaction_order: string | null;
  event_position: string | null;
  refusal: UsageRefusalReason | null;
  limit_value: string | null;
}

/** One request's decision, checked against what a hold may be (money-invariants.ts). */
function decisionOf(row: AuthorizationRow, request: UsageAuthorizationRequest): UsageAuthorizationDecision {
  const requestId = request.event.data.requestId;
  if (row.hold_won === null) {
    if (row.refusal === null || row.refusal === "funds") {
      assertRefusedForFunds(row.available_won, requestId);
      return { kind: "refused", reason: "funds", availableWon: row.available_won };
    }
    assert(
      row.limit_value !== null,
      `the hold of ${requestId} was refused by a ${row.refusal} limit it has not`,
    );
    return { kind: "refused", reason: row.refusal, limit: row.limit_value, availableWon: row.available_won };
  }
  assertHoldWithinFunds(
    {
      holdWon: row.hold_won,
      availableWon: row.available_won,
      estimatedWon: request.event.data.estimate.estimatedWon,
    },
    requestId,
  );
  assert(
    row.transaction_order !== null && row.event_position !== null,
    `the hold of ${requestId} was granted without its UsageAuthorized appended`,
  );
  return {
    kind: "held",
    holdWon: row.hold_won,
    availableWon: row.available_won,
    position: { commit: BigInt(row.transaction_order), prepare: BigInt(row.event_position) },
  };
}
