/**
 * Money and dates for the console, in one module. Money arrives as decimal strings (C6) and never becomes a
 * JS number here: Intl formats the string exactly, and sums are done in integer micro-won (BigInt). Won is
 * always formatted the ko-KR way (₩1,234), whatever the page's language; dates are Asia/Seoul dates (C7).
 */

import { formatWonForPeople } from "../../../src/kernel/won-text";

export const seoulTimeZone = "Asia/Seoul";
const microWonPerWon = 1_000_000n;
const decimalPattern = /^(-?)(\d+)(?:\.(\d+))?$/;

export type Language = "ko" | "en";

/** Intl formats a decimal string exactly (no float on the way); the cast is only for older lib typings. */
function exact(amount: string): number {
  return amount as unknown as number;
}

function assertDecimal(amount: string): void {
  if (!decimalPattern.test(amount)) throw new RangeError(`not a decimal string: ${JSON.stringify(amount)}`);
}

const microWonFormat = new Intl.NumberFormat("ko-KR", {
  style: "currency",
  currency: "KRW",
  minimumFractionDigits: 6,
  maximumFractionDigits: 6,
});
const plainFormat = new Intl.NumberFormat("ko-KR", { maximumFractionDigits: 20 });
const integerFormat = new Intl.NumberFormat("ko-KR", { maximumFractionDigits: 0 });

/**
 * A balance or amount: "₩10,000", "₩9,999.87" (at most 2 decimals, half-up). The one won format a person
 * reads, shared with what the service prints at start.
 */
export const formatWon = formatWonForPeople;

const chargeWonFormat = new Intl.NumberFormat("ko-KR", {
  style: "currency",
  currency: "KRW",
  minimumFractionDigits: 2,
  maximumFractionDigits: 2,
  roundingMode: "halfExpand",
});
const smallestShownMicroWon = 5_000n;

/**
 * Charges and the totals they add up to, side by side with one precision: "₩79.59", "₩0.79", "₩12.00"
 * (two decimals, half-up). A charge that rounds to nothing but is not zero reads "<₩0.01", never "₩0.00";
 * the exact micro-won stays in the breakdown and the CSV.
 */
export function formatChargeWon(amount: string): string {
  const micro = microWonOf(amount);
  const magnitude = micro < 0n ? -micro : micro;
  if (magnitude > 0n && magnitude < smallestShownMicroWon) return `${micro < 0n ? "-" : ""}<₩0.01`;
  return chargeWonFormat.format(exact(amount));
}

/** A charge's exact amount, as the ledger rounds it (C7): "₩0.003150". */
export function formatMicroWon(amount: string): string {
  assertDecimal(amount);
  return microWonFormat.format(exact(amount));
}

/** A unit price, FX rate or discount rate as written, with ko-KR grouping: "1,483.4". */
export function formatDecimal(amount: string): string {
  assertDecimal(amount);
  return plainFormat.format(exact(amount));
}

export function formatCount(count: number | null): string {
  return count === null ? "—" : integerFormat.format(count);
}

/** "0.15" → "15%". */
export function formatRate(rate: string): string {
  assertDecimal(rate);
  return new Intl.NumberFormat("ko-KR", { style: "percent", maximumFractionDigits: 4 }).format(exact(rate));
}

/** A share of counts (not money, so a number is exact enough): 0.25 → "25%", at most one decimal; none → "—". */
export function formatShare(share: number | null): string {
  return share === null ? "—" : shareFormat.format(share);
}
const shareFormat = new Intl.NumberFormat("ko-KR", { style: "percent", maximumFractionDigits: 1 });

/** Decimal string → integer micro-won; amounts carry at most 6 decimals (C7), more is refused. */
export function microWonOf(amount: string): bigint {
  const match = decimalPattern.exec(amount);
  if (!match) throw new RangeError(`not a decimal string: ${JSON.stringify(amount)}`);
  const [, sign, whole, fraction = ""] = match;
  if (fraction.length > 6) throw new RangeError(`more than 6 decimals: ${amount}`);
  const micro = BigInt(whole!) * microWonPerWon + BigInt(fraction.padEnd(6, "0"));
  return sign === "-" ? -micro : micro;
}

export function wonOfMicroWon(micro: bigint): string {
  const negative = micro < 0n;
  const absolute = negative ? -micro : micro;
  const whole = absolute / microWonPerWon;
  const fraction = (absolute % microWonPerWon).toString().padStart(6, "0").replace(/0+$/, "");
  return `${negative ? "-" : ""}${whole}${fraction ? `.${fraction}` : ""}`;
}

/** Exact sum of decimal amounts: "0.1" + "0.2" = "0.3". */
export function sumWon(amounts: Iterable<string>): string {
  let total = 0n;
  for (const amount of amounts) total += microWonOf(amount);
  return wonOfMicroWon(total);
}

const seoulDateParts = new Intl.DateTimeFormat("en-CA", {
  timeZone: seoulTimeZone,
  year: "numeric",
  month: "2-digit",
  day: "2-digit",
});

/** The Seoul calendar date of an instant, "YYYY-MM-DD". */
export function seoulDateOf(instant: Date): string {
  const parts = Object.fromEntries(
    seoulDateParts.formatToParts(instant).map((part) => [part.type, part.value]),
  );
  return `${parts.year}-${parts.month}-${parts.day}`;
}

/** Calendar arithmetic on "YYYY-MM-DD" (no time zone involved: a date is a date). */
export function addDays(date: string, days: number): string {
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(date);
  if (!match) throw new RangeError(`not a date: ${date}`);
  const utc = new Date(Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3]) + days));
  return utc.toISOString().slice(0, 10);
}

/** An instant shown in Seoul time, in the page's language: "2026. 11. 23. 오후 8:04:15" / "Nov 23, 2026, 8:04:15 PM". */
export function formatSeoulDateTime(iso: string, language: Language): string {
  return new Intl.DateTimeFormat(language === "ko" ? "ko-KR" : "en-US", {
    timeZone: seoulTimeZone,
    dateStyle: "medium",
    timeStyle: "medium",
  }).format(new Date(iso));
}

/** A Seoul date shown short for chart axes: "11. 23." / "Nov 23". */
export function formatShortDate(date: string, language: Language): string {
  const [year, month, day] = date.split("-").map(Number);
  return new Intl.DateTimeFormat(language === "ko" ? "ko-KR" : "en-US", {
    timeZone: "UTC",
    month: "short",
    day: "numeric",
  }).format(new Date(Date.UTC(year!, month! - 1, day!)));
}

/** A period of a usage chart shown by its first date: "Nov 23" (a day or a week), "Nov 2026", "2026". */
export function formatPeriodStart(
  date: string,
  period: "day" | "week" | "month" | "year",
  language: Language,
): string {
  if (period === "day" || period === "week") return formatShortDate(date, language);
  const [year, month] = date.split("-").map(Number);
  return new Intl.DateTimeFormat(language === "ko" ? "ko-KR" : "en-US", {
    timeZone: "UTC",
    year: "numeric",
    month: period === "month" ? "short" : undefined,
  }).format(new Date(Date.UTC(year!, month! - 1, 1)));
}
