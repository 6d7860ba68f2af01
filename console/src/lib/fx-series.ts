import type { FxRateEntry } from "./api";

export interface FxPoint {
  /** The Seoul date requests were priced on. */
  day: string;
  /** The day's UTC midnight: a time axis spaces days by their distance, not by their rank. */
  dayMs: number;
  /** For the chart's scale only: the exact rate stays the decimal string in `rateText`. */
  rate: number;
  rateText: string;
  source: string;
}

/**
 * The rate history (newest first, several records possible per day) → one point per day, oldest first: the
 * day's latest record, the one billing uses for that day.
 */
export function fxSeries(history: readonly FxRateEntry[]): FxPoint[] {
  const byDay = new Map<string, FxRateEntry>();
  for (const entry of history) {
    const kept = byDay.get(entry.appliesOn);
    if (kept === undefined || entry.recordedAt > kept.recordedAt) byDay.set(entry.appliesOn, entry);
  }
  return [...byDay.values()]
    .sort((left, right) => left.appliesOn.localeCompare(right.appliesOn))
    .map((entry) => ({
      day: entry.appliesOn,
      dayMs: Date.parse(`${entry.appliesOn}T00:00:00Z`),
      rate: Number(entry.rate),
      rateText: entry.rate,
      source: entry.source,
    }));
}
