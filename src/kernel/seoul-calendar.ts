import { TZDate, tz } from "@date-fns/tz";
// By function: the package's index loads all of its some 300 modules, a third of a second of every start.
import { addDays } from "date-fns/addDays";
import { format } from "date-fns/format";
import { isValid } from "date-fns/isValid";
import { parse } from "date-fns/parse";
import { subDays } from "date-fns/subDays";

/**
 * Billing days are Asia/Seoul calendar dates (C7). Every conversion goes through @date-fns/tz so that the
 * host's time zone never leaks in; Seoul has no daylight saving today, but we do not rely on that.
 */
export const seoulTimeZone = "Asia/Seoul";

/** A calendar date, "YYYY-MM-DD". */
export type IsoDate = string;

const isoDateFormat = "yyyy-MM-dd";
const isoDatePattern = /^\d{4}-\d{2}-\d{2}$/;
const inSeoul = tz(seoulTimeZone);

/**
 * The daily FX refresh (C7): a BullMQ job scheduler at 00:05 KST. Pass as the repeat options of
 * `queue.upsertJobScheduler(fxRefreshJobSchedulerId, fxRefreshSchedule, …)`.
 */
export const fxRefreshSchedule = { pattern: "5 0 * * *", tz: seoulTimeZone } as const;
export const fxRefreshJobSchedulerId = "fx-rate-refresh-daily";

/**
 * Dates already found valid. Every charge checks its FX rate date, and parsing is costly; the rate dates
 * in use are few, so the answers are remembered (bounded, valid dates only).
 */
const validIsoDates = new Set<string>();
const validIsoDatesMax = 10_000;

/** True for a real calendar date in canonical form ("2026-02-30" and "2026-3-1" are rejected). */
export function isIsoDate(text: string): text is IsoDate {
  if (validIsoDates.has(text)) return true;
  if (!isoDatePattern.test(text)) return false;
  const parsed = parse(text, isoDateFormat, new TZDate(0, seoulTimeZone), { in: inSeoul });
  const valid = isValid(parsed) && format(parsed, isoDateFormat) === text;
  if (valid && validIsoDates.size < validIsoDatesMax) validIsoDates.add(text);
  return valid;
}

function assertIsoDate(text: string): void {
  if (!isIsoDate(text)) throw new RangeError(`not a calendar date "YYYY-MM-DD": ${JSON.stringify(text)}`);
}

/** Midnight at the start of `date` in Seoul, as a Seoul-zoned date. */
function startOfSeoulDate(date: IsoDate): TZDate {
  assertIsoDate(date);
  return parse(date, isoDateFormat, new TZDate(0, seoulTimeZone), { in: inSeoul });
}

/**
 * Every charge asks for a Seoul date, and time-zone formatting is costly; the answer cannot change within
 * a quarter hour (every zone offset is a multiple of 15 minutes), so it is remembered per quarter hour.
 */
const quarterHourMs = 15 * 60_000;
const seoulDateCacheEntriesMax = 10_000;
const seoulDateByQuarterHour = new Map<number, IsoDate>();

/** The Seoul calendar date on which `instant` falls. */
export function seoulDateOf(instant: Date): IsoDate {
  if (!isValid(instant)) throw new RangeError("seoulDateOf: invalid instant");
  const quarterHour = Math.floor(instant.getTime() / quarterHourMs);
  let date = seoulDateByQuarterHour.get(quarterHour);
  if (date === undefined) {
    if (seoulDateByQuarterHour.size >= seoulDateCacheEntriesMax) seoulDateByQuarterHour.clear();
    date = format(new Date(quarterHour * quarterHourMs), isoDateFormat, { in: inSeoul });
    seoulDateByQuarterHour.set(quarterHour, date);
  }
  return date;
}

export function previousDate(date: IsoDate): IsoDate {
  return format(subDays(startOfSeoulDate(date), 1), isoDateFormat);
}

export function nextDate(date: IsoDate): IsoDate {
  return format(addDays(startOfSeoulDate(date), 1), isoDateFormat);
}

/** "2026-03-02" → "20260302", the bank's `searchdate` form. */
export function compactDateOf(date: IsoDate): string {
  return format(startOfSeoulDate(date), "yyyyMMdd");
}

/** The instant at which the Seoul date `date` begins (00:00 KST). */
export function startInstantOfSeoulDate(date: IsoDate): Date {
  return new Date(startOfSeoulDate(date).getTime());
}

/**
 * The first instant strictly after `now` whose Seoul wall clock reads hour:minute. Useful to say when the
 * 00:05 refresh will next run, or to schedule it without BullMQ.
 */
export function nextSeoulRunAt(hour: number, minute: number, now: Date): Date {
  if (!Number.isInteger(hour) || hour < 0 || hour > 23) throw new RangeError(`hour out of range: ${hour}`);
  if (!Number.isInteger(minute) || minute < 0 || minute > 59) {
    throw new RangeError(`minute out of range: ${minute}`);
  }
  const today = seoulDateOf(now);
  const candidateToday = runInstantOn(today, hour, minute);
  if (candidateToday.getTime() > now.getTime()) return candidateToday;
  return runInstantOn(nextDate(today), hour, minute);
}

function runInstantOn(date: IsoDate, hour: number, minute: number): Date {
  const start = startOfSeoulDate(date);
  const run = new TZDate(start.getFullYear(), start.getMonth(), start.getDate(), hour, minute, seoulTimeZone);
  return new Date(run.getTime());
}

/** The instant at which the Seoul calendar month after the one `instant` falls in begins (a monthly reset). */
export function startOfNextSeoulMonth(instant: Date): Date {
  const [year, month] = seoulDateOf(instant).split("-").map(Number) as [number, number];
  const next = month === 12 ? { year: year + 1, month: 1 } : { year, month: month + 1 };
  return startInstantOfSeoulDate(`${next.year}-${String(next.month).padStart(2, "0")}-01`);
}

/** "2026-12-01 00:00 KST": an instant as Seoul's wall clock reads it. */
export function seoulWallClockOf(instant: Date): string {
  return `${format(instant, "yyyy-MM-dd HH:mm", { in: inSeoul })} KST`;
}
