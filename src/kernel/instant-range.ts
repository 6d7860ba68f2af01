/**
 * The instants the API takes as text lie in years 1 through 9999 (UTC): PostgreSQL's timestamps and every
 * reader here hold those, and no billing question reaches outside them. Outside is bad input, never a 500.
 */
export function isInstantInRange(instant: Date): boolean {
  const year = instant.getUTCFullYear();
  return Number.isFinite(instant.getTime()) && year >= 1 && year <= 9999;
}

/**
 * True when `text`, "YYYY-MM-DDTHH:MM:SS.fff…Z" as toISOString writes it (any further fraction digits
 * aside), names a real instant in range: no month 13, no February 30, no hour 24.
 */
export function isCanonicalUtcInstant(text: string): boolean {
  const milliseconds = `${text.slice(0, 23)}Z`;
  const instant = new Date(milliseconds);
  return isInstantInRange(instant) && instant.toISOString() === milliseconds;
}
