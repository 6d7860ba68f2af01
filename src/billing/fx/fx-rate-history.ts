import type pg from "pg";
import { fxRatesTable } from "../../../projections/fx-rates";
import { canonicalMoney } from "../../kernel/money";
import { decodePositionCursor, encodePositionCursor } from "../../kernel/position-cursor";
import type { FxRateRecord } from "./fx-rate-in-force";

/**
 * Every recorded FX rate, newest first: by the day it applies on, then by when it was recorded, and of two
 * recorded in one millisecond the later in the log (the day's stream version). Each rate in money's one
 * form, as a charge's breakdown gives it: the first start's default is recorded as FX_USDKRW_DEFAULT spells
 * it ("1391.70"), and NUMERIC keeps that scale.
 *
 * A page at a time: the next starts after the last rate served, at its place in that order (the rate's
 * event names it), never at an offset, so a rate recorded between two pages is served where it sorts, once,
 * or not at all when it sorts among the pages already read (a later day's: the next read from the first
 * page shows it), and shifts none of the pages after it.
 */

export interface FxRateHistoryEntry extends FxRateRecord {
  recordedAt: string;
}

/** A rate's place in the history: its event, and the instant it was recorded (a check on the event). */
export interface FxRatePosition {
  recordedAt: string;
  eventId: string;
}

export interface FxRateHistoryPage {
  entries: FxRateHistoryEntry[];
  /** Where the next page starts (after it); null on the last page. */
  next: FxRatePosition | null;
}

/** A cursor naming a rate the history does not hold: never one a page gave. */
export class InvalidFxRateCursorError extends Error {
  override readonly name = "InvalidFxRateCursorError";
  constructor() {
    super("cursor: must be a nextCursor returned by a previous page");
  }
}

export function encodeFxRateCursor(position: FxRatePosition): string {
  return encodePositionCursor({ startedAt: position.recordedAt, requestId: position.eventId });
}

/** undefined for any text `encodeFxRateCursor` did not write (an account's cursor, say). */
export function decodeFxRateCursor(text: string): FxRatePosition | undefined {
  const decoded = decodePositionCursor(text, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  if (decoded === undefined || decoded.scope !== undefined) return undefined;
  return { recordedAt: decoded.startedAt, eventId: decoded.requestId };
}

const recordedAtText = `to_char(recorded_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
// A rate projected before stream versions were kept has none: last of its day and instant, as NULLS LAST.
const historyOrder = "applies_on, recorded_at, COALESCE(stream_version, -1), event_id";

export async function readFxRateHistory(
  database: Pick<pg.Pool, "query">,
  page: { limit: number; after?: FxRatePosition | undefined },
): Promise<FxRateHistoryPage> {
  if (page.after !== undefined) await assertHeld(database, page.after);
  const result = await database.query<{
    event_id: string;
    applies_on: string;
    rate_date: string;
    rate_krw_per_usd: string;
    source: FxRateRecord["source"];
    recorded_at: string;
  }>(
    `SELECT event_id, applies_on::text AS applies_on, rate_date::text AS rate_date,
            rate_krw_per_usd::text AS rate_krw_per_usd, source, ${recordedAtText} AS recorded_at
     FROM ${fxRatesTable.name}
     WHERE $2::text IS NULL
        OR (${historyOrder}) < (SELECT ${historyOrder} FROM ${fxRatesTable.name} WHERE event_id = $2)
     ORDER BY applies_on DESC, recorded_at DESC, COALESCE(stream_version, -1) DESC, event_id DESC
     LIMIT $1`,
    // One more than the page: whether there is a next page, without a count.
    [page.limit + 1, page.after?.eventId ?? null],
  );
  const rows = result.rows.slice(0, page.limit);
  const last = rows.at(-1);
  return {
    entries: rows.map((row) => ({
      appliesOn: row.applies_on,
      rateDate: row.rate_date,
      rateKrwPerUsd: canonicalMoney(row.rate_krw_per_usd),
      source: row.source,
      recordedAt: row.recorded_at,
    })),
    next:
      result.rows.length > page.limit && last !== undefined
        ? { recordedAt: last.recorded_at, eventId: last.event_id }
        : null,
  };
}

/** The rate a cursor names is in the history, recorded when the cursor says: else it is no page's. */
async function assertHeld(database: Pick<pg.Pool, "query">, position: FxRatePosition): Promise<void> {
  const held = await database.query(
    `SELECT 1 FROM ${fxRatesTable.name} WHERE event_id = $1 AND ${recordedAtText} = $2`,
    [position.eventId, position.recordedAt],
  );
  if (held.rows.length === 0) throw new InvalidFxRateCursorError();
}
