import type pg from "pg";
import { fxRatesTable } from "../../../projections/fx-rates";
import { canonicalMoney } from "../../kernel/money";
import type { FxRateRecord } from "./fx-rate-in-force";

/**
 * Every recorded FX rate, newest first: by the day it applies on, then by when it was recorded, and of two
 * recorded in one millisecond the later in the log (the day's stream version). Each rate in money's one
 * form, as a charge's breakdown gives it: the first start's default is recorded as FX_USDKRW_DEFAULT spells
 * it ("1391.70"), and NUMERIC keeps that scale.
 */

export interface FxRateHistoryEntry extends FxRateRecord {
  recordedAt: string;
}

export async function readFxRateHistory(
  database: Pick<pg.Pool, "query">,
  rowsMax: number,
): Promise<FxRateHistoryEntry[]> {
  const result = await database.query<{
    applies_on: string;
    rate_date: string;
    rate_krw_per_usd: string;
    source: FxRateRecord["source"];
    recorded_at: string;
  }>(
    `SELECT applies_on::text AS applies_on, rate_date::text AS rate_date, rate_krw_per_usd::text AS rate_krw_per_usd,
            source, to_char(recorded_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS recorded_at
     FROM ${fxRatesTable.name}
     ORDER BY applies_on DESC, recorded_at DESC, stream_version DESC NULLS LAST, event_id DESC
     LIMIT $1`,
    [rowsMax],
  );
  return result.rows.map((row) => ({
    appliesOn: row.applies_on,
    rateDate: row.rate_date,
    rateKrwPerUsd: canonicalMoney(row.rate_krw_per_usd),
    source: row.source,
    recordedAt: row.recorded_at,
  }));
}
