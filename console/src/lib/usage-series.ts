import type { UsageDay } from "./api";

/**
 * How long one bar of a usage chart is. A chart of a few hundred bars shows none of them (a bar narrower than
 * a pixel) and a loop over a typed range must stay bounded, so a long range is shown in longer periods: every
 * day of the range is in some bar, and the bars add up to the totals beside them.
 */
export type UsagePeriod = "day" | "week" | "month" | "year";

/** The most bars a chart shows in each period before a longer one is taken; years are bounded by the dates. */
const barsMax = { day: 92, week: 105, month: 120 } as const;
/** Four-digit years: no range has more yearly bars than this. */
const yearsMax = 10_000;

export interface UsageSeries {
  period: UsagePeriod;
  /** One row per period of the range, oldest first: `start` (its first date inside the range), then a value per group. */
  rows: Record<string, string | number>[];
  groups: string[];
}

/** A "YYYY-MM-DD" date as UTC midnight (setUTCFullYear: Date.UTC would read years below 100 as 19xx). */
function utcOf(date: string): Date {
  const [year, month, day] = date.split("-").map(Number);
  const utc = new Date(0);
  utc.setUTCFullYear(year!, month! - 1, day!);
  return utc;
}

function dateOf(utc: Date): string {
  const twoDigits = (value: number) => String(value).padStart(2, "0");
  const year = String(utc.getUTCFullYear()).padStart(4, "0");
  return `${year}-${twoDigits(utc.getUTCMonth() + 1)}-${twoDigits(utc.getUTCDate())}`;
}

function daysInRange(range: { from: string; to: string }): number {
  return Math.round((utcOf(range.to).getTime() - utcOf(range.from).getTime()) / 86_400_000) + 1;
}

/** The shortest period that shows the range in no more bars than that period allows. */
export function usagePeriodOf(range: { from: string; to: string }): UsagePeriod {
  const days = daysInRange(range);
  if (days <= barsMax.day) return "day";
  if (Math.ceil(days / 7) + 1 <= barsMax.week) return "week";
  const months = (Number(range.to.slice(0, 4)) - Number(range.from.slice(0, 4))) * 12;
  if (months + Number(range.to.slice(5, 7)) - Number(range.from.slice(5, 7)) + 1 <= barsMax.month) {
    return "month";
  }
  return "year";
}

/** The first date of the period (weeks start on Monday) that holds `date`. */
export function periodStartOf(date: string, period: UsagePeriod): string {
  switch (period) {
    case "day":
      return date;
    case "week": {
      const monday = utcOf(date);
      monday.setUTCDate(monday.getUTCDate() - ((monday.getUTCDay() + 6) % 7));
      return dateOf(monday);
    }
    case "month":
      return `${date.slice(0, 7)}-01`;
    case "year":
      return `${date.slice(0, 4)}-01-01`;
    default: {
      const unknown: never = period;
      throw new Error(`unknown period ${String(unknown)}`);
    }
  }
}

function nextPeriodStart(start: string, period: UsagePeriod): string {
  const date = utcOf(start);
  if (period === "day") date.setUTCDate(date.getUTCDate() + 1);
  else if (period === "week") date.setUTCDate(date.getUTCDate() + 7);
  else if (period === "month") date.setUTCMonth(date.getUTCMonth() + 1);
  else date.setUTCFullYear(date.getUTCFullYear() + 1);
  return dateOf(date);
}

/** A period's start, or the range's first date when the period starts before the range. */
function insideRange(start: string, from: string): string {
  if (start < from) return from;
  return start;
}

/** The periods of the range, each by its first date inside the range (the first one may start before it). */
function periodStartsOf(range: { from: string; to: string }, period: UsagePeriod): string[] {
  const starts: string[] = [];
  const last = utcOf(range.to).getTime();
  let start = periodStartOf(range.from, period);
  // Compared as instants: a year past 9999 has five digits and would sort before "9999-…" as text.
  while (utcOf(start).getTime() <= last) {
    if (starts.length === yearsMax) {
      throw new Error(`more than ${yearsMax} periods from ${range.from} to ${range.to}`);
    }
    starts.push(insideRange(start, range.from));
    start = nextPeriodStart(start, period);
  }
  return starts;
}

/** Usage rows → one chart row per period of the range with one value per group (model or key); none is 0. */
export function usageSeries(
  days: readonly UsageDay[],
  range: { from: string; to: string },
  groupOf: (day: UsageDay) => string,
  measureOf: (day: UsageDay) => bigint,
  scale: (total: bigint) => number,
): UsageSeries {
  const period = usagePeriodOf(range);
  const groups = [...new Set(days.map(groupOf))].sort();
  const totals = new Map<string, bigint>();
  for (const day of days) {
    const start = periodStartOf(day.day, period);
    const key = `${insideRange(start, range.from)}\u0000${groupOf(day)}`;
    totals.set(key, (totals.get(key) ?? 0n) + measureOf(day));
  }
  const rows = periodStartsOf(range, period).map((start) => {
    const row: Record<string, string | number> = { start };
    for (const group of groups) row[group] = scale(totals.get(`${start}\u0000${group}`) ?? 0n);
    return row;
  });
  return { period, rows, groups };
}
