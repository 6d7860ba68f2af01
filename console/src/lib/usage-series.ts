import type { UsageDay } from "./api";
import { datesBetween } from "./format";

export interface DailySeries {
  rows: Record<string, string | number>[];
  groups: string[];
}

/** Usage rows → one chart row per Seoul day with one value per group (model or key); missing days are 0. */
export function dailySeries(
  days: readonly UsageDay[],
  range: { from: string; to: string },
  groupOf: (day: UsageDay) => string,
  measureOf: (day: UsageDay) => bigint,
  scale: (total: bigint) => number,
): DailySeries {
  const groups = [...new Set(days.map(groupOf))].sort();
  const totals = new Map<string, bigint>();
  for (const day of days) {
    const key = `${day.day}\u0000${groupOf(day)}`;
    totals.set(key, (totals.get(key) ?? 0n) + measureOf(day));
  }
  const rows = datesBetween(range.from, range.to).map((date) => {
    const row: Record<string, string | number> = { day: date };
    for (const group of groups) row[group] = scale(totals.get(`${date}\u0000${group}`) ?? 0n);
    return row;
  });
  return { rows, groups };
}
