import { type IsoDate, seoulDateOf, startInstantOfSeoulDate } from "../../kernel/seoul-calendar";

/**
 * An Asia/Seoul calendar month, "YYYY-MM": the period of a statement and of the finance export. It starts
 * at 00:00 KST on its first day and ends, exclusive, at 00:00 KST on the next month's first day.
 */

export type StatementMonth = string;

const monthPattern = /^(\d{4})-(0[1-9]|1[0-2])$/;

/** From the epoch's year to the last whose next month is still a four-digit year's. */
export function isStatementMonth(text: string): text is StatementMonth {
  const match = monthPattern.exec(text);
  return match !== null && Number(match[1]) >= 1970 && text !== "9999-12";
}

/** The Asia/Seoul calendar month in which `instant` falls. */
export function statementMonthOf(instant: Date): StatementMonth {
  return seoulDateOf(instant).slice(0, "YYYY-MM".length);
}

export function firstDateOf(month: StatementMonth): IsoDate {
  return `${month}-01`;
}

export function nextMonthOf(month: StatementMonth): StatementMonth {
  const match = monthPattern.exec(month);
  if (!match) throw new RangeError(`not a month "YYYY-MM": ${JSON.stringify(month)}`);
  const year = Number(match[1]);
  const monthNumber = Number(match[2]);
  return monthNumber === 12
    ? `${String(year + 1).padStart(4, "0")}-01`
    : `${match[1]}-${String(monthNumber + 1).padStart(2, "0")}`;
}

/** [start, end) of the month as instants. */
export function boundsOf(month: StatementMonth): { start: Date; end: Date } {
  return {
    start: startInstantOfSeoulDate(firstDateOf(month)),
    end: startInstantOfSeoulDate(firstDateOf(nextMonthOf(month))),
  };
}
