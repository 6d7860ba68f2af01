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
  // An HTTP date starts with a day name; Date.parse would read "-5" as a year.
  if (!/^[A-Za-z]{3},/.test(value.trim())) return undefined;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : bounded(date - nowMs);
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
