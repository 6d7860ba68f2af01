import { type IsoDate, isIsoDate } from "../../kernel/seoul-calendar";

/** One `FxRateUpdated`, as the FX-rates projection holds it. */
export interface FxRateRecord {
  appliesOn: IsoDate;
  rateDate: IsoDate;
  rateKrwPerUsd: string;
  source: "koreaexim" | "admin" | "default";
}

/**
 * The rate in force on Seoul date `date` (C7): the record for `date` itself, or else the latest earlier
 * one — "if a refresh fails, D keeps the latest earlier rate". `history` must be in ledger order; when
 * several records apply on the same date (a refresh, then an admin correction) the last one wins.
 * Returns null only when no rate applies on or before `date` (start-up records FX_USDKRW_DEFAULT first).
 */
export function selectFxRateInForce<RateRecord extends FxRateRecord>(
  history: readonly RateRecord[],
  date: IsoDate,
): RateRecord | null {
  if (!isIsoDate(date)) throw new RangeError(`not a calendar date: ${JSON.stringify(date)}`);
  let inForce: RateRecord | null = null;
  for (const record of history) {
    // ISO dates order lexicographically, so string comparison is date comparison.
    if (record.appliesOn > date) continue;
    if (inForce === null || record.appliesOn >= inForce.appliesOn) inForce = record;
  }
  return inForce;
}

/** Whether start-up (or a retry later in the day) should refresh: no record applies on `date` itself. */
export function isRefreshNeeded(history: readonly FxRateRecord[], date: IsoDate): boolean {
  return selectFxRateInForce(history, date)?.appliesOn !== date;
}
