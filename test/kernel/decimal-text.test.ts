import { describe, expect, it } from "vitest";
import { decimalStringLengthMax, isDecimalString } from "../../src/kernel/money";
import { parseLedgerEvent } from "../../src/ledger/events";

/**
 * Money, prices and rates travel as decimal text, bounded in length: PostgreSQL's NUMERIC refuses more
 * than 16,383 decimals, and one event carrying such a text would stop every projection casting it.
 */

const metadata = { actor: "user:ana", occurredAt: "2026-11-29T00:00:00.000Z" };

describe("decimal text", () => {
  it("accepts plain decimals up to the length bound and nothing longer", () => {
    expect(isDecimalString("0")).toBe(true);
    expect(isDecimalString("-1234.500")).toBe(true);
    expect(isDecimalString(`0.${"1".repeat(decimalStringLengthMax - 2)}`)).toBe(true);
    expect(isDecimalString(`0.${"1".repeat(decimalStringLengthMax - 1)}`)).toBe(false);
    expect(isDecimalString(`0.${"1".repeat(16_384)}`)).toBe(false);
    for (const text of ["", "1e3", "01", ".5", "1.", " 1", "+1", "NaN"])
      expect(isDecimalString(text)).toBe(false);
  });

  it("keeps an event with an over-long amount out of the log", () => {
    const event = (balanceBelowWon: string) => ({
      type: "AlertThresholdSet",
      data: { account: { kind: "user", id: "ana" }, balanceBelowWon },
      metadata,
    });
    expect(parseLedgerEvent(event("5000")).data).toMatchObject({ balanceBelowWon: "5000" });
    expect(() => parseLedgerEvent(event(`0.${"1".repeat(16_384)}`))).toThrow(/decimal string/);
  });
});
