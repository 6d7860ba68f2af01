/**
 * Money, prices and rates as text: a sign, a whole part without leading zeros, an optional fraction, no
 * exponent. Without decimal.js, so that the console bundles it (its CSV is the server's: billing-csv.ts).
 */

const decimalStringPattern = /^-?(0|[1-9]\d*)(\.\d+)?$/;

/**
 * No amount, price or rate is longer. PostgreSQL's NUMERIC refuses more than 16,383 decimals: one such
 * text in an event would stop every projection that casts it, for good (the log is append-only).
 */
export const decimalStringLengthMax = 100;

export function isDecimalString(text: string): boolean {
  return text.length <= decimalStringLengthMax && decimalStringPattern.test(text);
}
