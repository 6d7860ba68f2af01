/**
 * Won as a person reads it, wherever a person reads it: the console (console/src/lib/format.ts uses this
 * module) and what the service prints at start. ko-KR grouping and sign, "₩10,000", "₩9,999.87": at most two
 * decimals, half-up. The API never uses this form: there money is the decimal string of kernel/money.ts.
 *
 * No decimal.js here (the console bundles this file): Intl formats the decimal string itself, exactly, with
 * no JS number on the way.
 */

const decimalPattern = /^-?\d+(\.\d+)?$/;

const wonFormat = new Intl.NumberFormat("ko-KR", {
  style: "currency",
  currency: "KRW",
  minimumFractionDigits: 0,
  maximumFractionDigits: 2,
  roundingMode: "halfExpand",
  // A debt that rounds to nothing shows as nothing, not as "-₩0".
  signDisplay: "negative",
});

/** Intl formats a decimal string exactly; the cast is only for lib typings that know numbers alone. */
function exact(amount: string): number {
  return amount as unknown as number;
}

/** "10000" → "₩10,000"; "9999.875" → "₩9,999.88". */
export function formatWonForPeople(amount: string): string {
  if (!decimalPattern.test(amount)) throw new RangeError(`not a decimal string: ${JSON.stringify(amount)}`);
  return wonFormat.format(exact(amount));
}
