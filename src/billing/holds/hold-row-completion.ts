import type pg from "pg";
import { assert } from "../../kernel/assert";
import { type LedgerEventType, schemaVersionOf } from "../../ledger/events";
import { BatchedCalls } from "../../ledger/store/batched-calls";

/**
 * A request's usage completes its hold row in place (src/ledger/schema/holds/request-holds.ts): the
 * settlement event the log writer will append, and what the row now costs its account. Group-committed
 * across requests — one statement and one synchronous commit for every usage that finished meanwhile — so a
 * complete answer's last bytes, which wait for it, wait for one WAL flush shared with the others. That commit
 * also makes a JSON request's hold durable (its own commit did not wait for the flush: hold-authorizer.ts).
 */

/** An event as a hold row keeps it until it is logged. */
export interface RowEvent {
  eventId: string;
  type: LedgerEventType;
  schemaVersion: number;
  data: unknown;
  metadata: unknown;
}

export function rowEventOf(
  eventId: string,
  event: { type: LedgerEventType; data: unknown; metadata: unknown },
): RowEvent {
  return {
    eventId,
    type: event.type,
    schemaVersion: schemaVersionOf(event.type),
    data: event.data,
    metadata: event.metadata,
  };
}

/**
 * Of each settlement's data, the fields its hold row's columns already say, for the same request: the row
 * keeps the rest, and `ledger_hold_settlement` (src/ledger/schema/holds/ledger-hold-settlement.ts) adds
 * these back from the columns when the event is logged. A narrower row, which completing it writes whole.
 */
const fieldsTheRowSays: Partial<Record<LedgerEventType, readonly string[]>> = {
  UsageRecorded: [
    "requestId",
    "keyId",
    "account",
    "userId",
    "organizationId",
    "endpoint",
    "streamed",
    "startedAt",
  ],
  UsageVoided: ["requestId", "account"],
};

/** A settlement as its row keeps it: without what the row's columns say (`fieldsTheRowSays`). */
export function rowSettlementOf(settlement: RowEvent): RowEvent {
  const said = fieldsTheRowSays[settlement.type];
  assert(said !== undefined, `a hold row is not settled by ${settlement.type}`);
  const data = { ...(settlement.data as Record<string, unknown>) };
  const requestId = data.requestId;
  for (const field of said) delete data[field];
  const { correlationId, ...metadata } = settlement.metadata as Record<string, unknown>;
  // The row's id says it, and the function adds it back: a settlement without it would gain it.
  assert(
    correlationId === requestId,
    `the settlement of ${String(requestId)} is correlated with its request`,
  );
  return { ...settlement, data, metadata };
}

export interface RowCompletion {
  requestId: string;
  settlement: RowEvent;
  /** What the settled row costs its account until logged: the exact cost, or 0 for a void. */
  pendingWon: string;
}

export class HoldRowCompletion {
  private readonly batches: BatchedCalls<RowCompletion, boolean>;

  constructor(
    private readonly pool: Pick<pg.Pool, "query">,
    batchSizeMax: number,
  ) {
    this.batches = new BatchedCalls((completions) => this.completeBatch(completions), batchSizeMax);
  }

  /**
   * True once the row is completed and durable — by this settlement, or already by the same one (a retry
   * whose first attempt committed before its answer was lost); false when the request has no open row.
   */
  async complete(completion: RowCompletion): Promise<boolean> {
    return this.batches.call({ ...completion, settlement: rowSettlementOf(completion.settlement) });
  }

  /**
   * The orphan sweep's completion of a row (orphan-hold-settlement.ts), not batched. With `reserveMs`, what
   * the estimated usage does not use of the hold's estimate stays reserved on the account that long
   * (src/ledger/schema/holds/swept-hold-reserves.ts), written by the same statement, so no snapshot sees the
   * hold released before its gateway's own settlement could arrive. True as `complete`.
   */
  async completeSwept(completion: RowCompletion, reserveMs: number | undefined): Promise<boolean> {
    const settlement = rowSettlementOf(completion.settlement);
    const result = await this.pool.query({
      name: "hold-row-complete-swept",
      text: `WITH completed AS (
               UPDATE request_holds holds
               SET settlement_event = $2::jsonb, pending_won = $3::numeric, settled_at = coalesce(holds.settled_at, now())
               WHERE holds.request_id = $1
                 AND (holds.settled_at IS NULL OR holds.settlement_event->>'eventId' = $2::jsonb->>'eventId')
               RETURNING holds.request_id, holds.account_kind, holds.account_id, holds.key_id, holds.month,
                         holds.gateway_instance,
                         greatest(holds.hold_won, holds.estimated_won) - holds.pending_won AS unused_won
             ), reserved AS (
               INSERT INTO swept_hold_reserves (request_id, account_kind, account_id, key_id, month,
                                                gateway_instance, reserved_won, reserved_until)
               SELECT request_id, account_kind, account_id, key_id, month, gateway_instance, unused_won,
                      now() + make_interval(secs => $4 / 1000.0)
               FROM completed WHERE $4::bigint IS NOT NULL AND unused_won > 0
               ON CONFLICT (request_id) DO NOTHING
             )
             SELECT request_id FROM completed`,
      values: [completion.requestId, JSON.stringify(settlement), completion.pendingWon, reserveMs ?? null],
    });
    return result.rowCount === 1;
  }

  /** Whether the request still has a row, open or settled but not yet logged. */
  async hasRow(requestId: string): Promise<boolean> {
    const result = await this.pool.query({
      name: "hold-row-exists",
      text: "SELECT 1 FROM request_holds WHERE request_id = $1",
      values: [requestId],
    });
    return result.rowCount === 1;
  }

  /**
   * Voids the request's hold if its row is open (its statement's outcome was unknown): the void releases the
   * whole hold the row holds. True when a row was voided.
   */
  async voidIfOpen(requestId: string, eventId: string, metadata: unknown): Promise<boolean> {
    const result = await this.pool.query({
      name: "hold-row-void",
      text: `UPDATE request_holds SET pending_won = 0, settled_at = now(),
               settlement_event = jsonb_build_object('eventId', $2::uuid, 'type', 'UsageVoided', 'schemaVersion', $3::int,
                 'data', jsonb_build_object('releasedWon', hold_won::text, 'reason', 'ledger-unavailable'),
                 'metadata', $4::jsonb)
             WHERE request_id = $1 AND settled_at IS NULL`,
      values: [requestId, eventId, schemaVersionOf("UsageVoided"), JSON.stringify(metadata)],
    });
    return result.rowCount === 1;
  }

  private async completeBatch(
    completions: readonly RowCompletion[],
  ): Promise<PromiseSettledResult<boolean>[]> {
    const result = await this.pool.query<{ request_id: string }>({
      name: "hold-row-complete",
      // jsonb, parsed once as the statement is bound: as json text, the batch would be parsed again here and each
      // settlement a third time into its column.
      text: `WITH input AS (
               SELECT * FROM jsonb_to_recordset($1::jsonb) AS input(request_id text, settlement jsonb, pending_won numeric)
             )
             UPDATE request_holds holds
             SET settlement_event = input.settlement, pending_won = input.pending_won,
                 settled_at = coalesce(holds.settled_at, now())
             FROM input
             -- The ids as one array: probes of the primary key, whatever the planner guesses of the table.
             WHERE holds.request_id = ANY (ARRAY(SELECT input.request_id FROM input))
               AND holds.request_id = input.request_id
               AND (holds.settled_at IS NULL OR holds.settlement_event->>'eventId' = input.settlement->>'eventId')
             RETURNING holds.request_id`,
      values: [
        JSON.stringify(
          completions.map((completion) => ({
            request_id: completion.requestId,
            settlement: completion.settlement,
            pending_won: completion.pendingWon,
          })),
        ),
      ],
    });
    const completed = new Set(result.rows.map((row) => row.request_id));
    return completions.map((completion) => ({
      status: "fulfilled",
      value: completed.has(completion.requestId),
    }));
  }
}
