import type pg from "pg";
import { type LedgerEvent, type LedgerEventType, upcastEventData } from "../events";
import type { RecordedEvent } from "./event-store";
import type { LogPosition } from "./log-position";
import { visibleTransactionOrderBelow } from "./log-visibility";

/**
 * The PostgreSQL log as people browse it (the admin API's event log): newest or oldest first, optionally
 * one stream and some event types, between two positions, a page at a time. Reading the newest first is a
 * backward scan of the primary key; a type filter is applied during that scan, so a rare type on a long log
 * reads many rows for one page (no index on the type: every append would pay for it).
 *
 * A page in log order is also how a client follows the log (`after` = the last page's `next`, with a type
 * filter or not): it holds back what a transaction still running may land before, by the store's visibility
 * rule, as `EventStore.readAll` does, or a follower's `after` would pass over a late commit for good. A page
 * newest first shows everything committed.
 */

export interface EventLogQuery {
  order: "asc" | "desc";
  types: readonly LedgerEventType[] | undefined;
  streamId: string | undefined;
  after: LogPosition | undefined;
  before: LogPosition | undefined;
  limit: number;
}

interface EventRow {
  transaction_order: string;
  position: string;
  event_id: string;
  stream_id: string;
  stream_version: number;
  type: LedgerEventType;
  schema_version: number;
  data: unknown;
  metadata: LedgerEvent["metadata"];
  recorded_at: Date;
}

export async function browseEventLog(
  database: Pick<pg.Pool, "query">,
  query: EventLogQuery,
): Promise<RecordedEvent[]> {
  const direction = query.order === "desc" ? "DESC" : "ASC";
  // Unnamed, so planned with its values: absent bounds and filters fold away.
  const result = await database.query<EventRow>(
    `SELECT transaction_order::text AS transaction_order, position::text AS position, event_id::text AS event_id,
            stream_id, stream_version, type, schema_version, data, metadata, recorded_at
     FROM ledger_events
     WHERE ($1::text[] IS NULL OR type = ANY($1))
       AND ($2::text IS NULL OR stream_id = $2)
       AND ($3::bigint IS NULL OR (transaction_order, position) > ($3, $4::bigint))
       AND ($5::bigint IS NULL OR (transaction_order, position) < ($5, $6::bigint))
       ${query.order === "asc" ? `AND transaction_order < ${visibleTransactionOrderBelow("(SELECT transaction_order_offset FROM ledger_settings)")}` : ""}
     -- Qualified: bare names would sort by the text columns of the select list (10 before 9).
     ORDER BY ledger_events.transaction_order ${direction}, ledger_events.position ${direction}
     LIMIT $7`,
    [
      query.types ?? null,
      query.streamId ?? null,
      query.after?.commit.toString() ?? null,
      query.after?.prepare.toString() ?? null,
      query.before?.commit.toString() ?? null,
      query.before?.prepare.toString() ?? null,
      query.limit,
    ],
  );
  return result.rows.map(
    (row) =>
      ({
        type: row.type,
        data: upcastEventData(row.type, row.schema_version, row.data),
        metadata: row.metadata,
        eventId: row.event_id,
        streamId: row.stream_id,
        streamVersion: row.stream_version,
        position: { commit: BigInt(row.transaction_order), prepare: BigInt(row.position) },
        recordedAt: row.recorded_at,
      }) as RecordedEvent,
  );
}

/** The id of the event at a log position (what the console shows), if there is one. */
export async function eventIdAt(
  database: Pick<pg.Pool, "query">,
  position: LogPosition,
): Promise<string | undefined> {
  const result = await database.query<{ event_id: string }>(
    "SELECT event_id::text AS event_id FROM ledger_events WHERE transaction_order = $1 AND position = $2",
    [position.commit.toString(), position.prepare.toString()],
  );
  return result.rows[0]?.event_id;
}
