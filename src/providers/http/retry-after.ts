import type { IncomingHttpHeaders } from "node:http";

/** A `Retry-After` further away than this is read as this: no upstream pause is worth more to us. */
const retryAfterMsMax = 3_600_000;

/**
 * How long the upstream asked us to wait, from the moment it answered: `retry-after-ms` (milliseconds, sent
 * by some providers for sub-second pauses) before `Retry-After` (delay-seconds or an HTTP date). Absent or
 * unreadable: undefined (the caller's own backoff applies).
 */
export function retryAfterMsOf(headers: IncomingHttpHeaders, nowMs: number = Date.now()): number | undefined {
  const milliseconds = numberOf(headers["retry-after-ms"]);
  if (milliseconds !== undefined) return bounded(milliseconds);
  const value = single(headers["retry-after"]);
  if (value === undefined) return undefined;
  const seconds = numberOf(value);
  if (seconds !== undefined) return bounded(seconds * 1_000);
  const date = httpDateMsOf(value.trim());
  return date === undefined ? undefined : bounded(date - nowMs);
}

/**
 * An HTTP date in any of the three forms a recipient must accept (RFC 9110, 5.6.7): "Sun, 06 Nov 1994
 * 08:49:37 GMT", the obsolete "Sunday, 06-Nov-94 08:49:37 GMT" and asctime's "Sun Nov  6 08:49:37 1994".
 * Each starts with a day name (Date.parse alone would read "-5" as a year); asctime names no zone, so it
 * is read as GMT, as HTTP dates always are, not in the process's local time.
 */
function httpDateMsOf(text: string): number | undefined {
  let dated = Number.NaN;
  if (/^[A-Za-z]{3,9}, /.test(text)) dated = Date.parse(text);
  else if (/^[A-Za-z]{3} [A-Za-z]{3} [ \d]\d \d\d:\d\d:\d\d \d{4}$/.test(text))
    dated = Date.parse(`${text} GMT`);
  return Number.isNaN(dated) ? undefined : dated;
}

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function numberOf(value: string | string[] | undefined): number | undefined {
  const text = single(value)?.trim();
  if (text === undefined || !/^\d+(\.\d+)?$/.test(text)) return undefined;
  return Number(text);
}

function bounded(milliseconds: number): number {
  return Math.min(Math.max(0, Math.ceil(milliseconds)), retryAfterMsMax);
}
