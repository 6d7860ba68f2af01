import Decimal from "decimal.js";
import { decimalStringLengthMax, isDecimalString } from "./decimal-text";

/**
 * Money arithmetic. Amounts are Decimal in memory, NUMERIC in PostgreSQL and decimal strings in JSON and
 * events; a JS number never holds money. This module owns its own Decimal constructor so that no other
 * configuration of decimal.js can change how money rounds.
 */
export const Money = Decimal.clone({
  precision: 60,
  rounding: Decimal.ROUND_HALF_UP,
  toExpNeg: -60,
  toExpPos: 60,
});
export type Money = Decimal;

/** Charges are rounded once, half-up, to micro-won (C7). */
export const chargeDecimalPlaces = 6;
/** Credit amounts carry at most 2 decimal places (C6). */
export const creditDecimalPlaces = 2;

export { decimalStringLengthMax, isDecimalString };

/** Parses a decimal string; anything else (numbers, exponents, blanks) is a programmer error upstream. */
export function parseMoney(text: string): Money {
  if (!isDecimalString(text)) throw new RangeError(`not a decimal string: ${JSON.stringify(text)}`);
  return new Money(text);
}

/**
 * The canonical string form of money on every API (docs/api.md, "Money"): plain notation, no exponent, no
 * trailing zeros after the point and no bare point ("997.1377", "10000", "0.00315", "-2.5"). One form, so
 * that the same amount reads the same in a statement, a balance and a CSV, and clients may compare strings.
 * It is exact: trimming zeros never rounds. Events keep what they recorded (a charge's six places).
 */
export function formatMoney(amount: Money): string {
  // Decimal keeps the sign of a zero ("-0"); money has one zero.
  return amount.isZero() ? "0" : amount.toFixed();
}

/** A decimal string as read from NUMERIC or an event ("997.137700"), in the canonical form ("997.1377"). */
export function canonicalMoney(text: string): string {
  return formatMoney(parseMoney(text));
}

const canonicalMoneyPattern = /^-?(0|[1-9]\d*)(\.\d*[1-9])?$/;

export function isCanonicalMoney(text: string): boolean {
  return canonicalMoneyPattern.test(text) && text !== "-0";
}

/** Fixed number of places, for the wire and CSV: "1234.500000". */
export function formatMoneyFixed(amount: Money, decimalPlaces: number): string {
  return amount.toFixed(decimalPlaces, Decimal.ROUND_HALF_UP);
}

export function roundChargeWon(amount: Money): Money {
  return amount.toDecimalPlaces(chargeDecimalPlaces, Decimal.ROUND_HALF_UP);
}

export function sumMoney(amounts: Iterable<Money>): Money {
  let total = new Money(0);
  for (const amount of amounts) total = total.plus(amount);
  return total;
}

export function decimalPlacesOf(amount: Money): number {
  return amount.decimalPlaces();
}
