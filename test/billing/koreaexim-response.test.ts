import { describe, expect, it } from "vitest";
import {
  KoreaeximMalformedResponseError,
  KoreaeximResultCodeError,
} from "../../src/billing/fx/koreaexim-errors";
import { interpretExchangeBody, parseBankDecimal } from "../../src/billing/fx/koreaexim-response";
import { businessDayRows, refusalRows } from "./koreaexim-rows";

const searchDate = "2026-03-03";

describe("parseBankDecimal", () => {
  it.each([
    ["1,483.4", "1483.4"],
    ["1,483.40", "1483.4"],
    ["1483.4", "1483.4"],
    ["1,234,567.89", "1234567.89"],
    ["961.4", "961.4"],
    [" 1,483 ", "1483"],
  ])("reads %s as %s", (text, expected) => {
    expect(parseBankDecimal(text)?.toFixed()).toBe(expected);
  });

  it.each(["", "1,48,3.4", "1.483,4", "-1,483.4", "1,483.", "abc", "1e3"])("refuses %j", (text) => {
    expect(parseBankDecimal(text)).toBeNull();
  });
});

describe("interpretExchangeBody", () => {
  it("finds the USD row among all currencies and strips its thousands separators", () => {
    // given a full business-day answer with USD last
    const body = businessDayRows("1,483.4");
    // when
    const answer = interpretExchangeBody(body, searchDate);
    // then
    expect(answer.kind).toBe("rate");
    expect(answer.kind === "rate" && answer.rateKrwPerUsd.toFixed()).toBe("1483.4");
  });

  it("reads an empty array as no rate published", () => {
    expect(interpretExchangeBody([], searchDate)).toEqual({ kind: "no-rate-published" });
  });

  it.each([
    [2, "data-code-error"],
    [3, "authkey-error"],
    [4, "daily-request-limit-exceeded"],
    [9, "unknown-result-code"],
  ])("turns result %i into a typed error (%s), not a rate", (resultCode, reason) => {
    // given the bank's refusal row / when
    const interpret = () => interpretExchangeBody(refusalRows(resultCode), searchDate);
    // then
    expect(interpret).toThrow(KoreaeximResultCodeError);
    expect(interpret).toThrow(expect.objectContaining({ resultCode, reason, searchDate }));
  });

  it("treats a refusal sent as a bare object like a refusal row", () => {
    expect(() => interpretExchangeBody({ result: 4 }, searchDate)).toThrow(
      expect.objectContaining({ resultCode: 4, reason: "daily-request-limit-exceeded" }),
    );
  });

  it.each([
    ["no USD row", businessDayRows("1,483.4").filter((row) => row.cur_unit !== "USD")],
    ["an unreadable USD rate", businessDayRows("N/A")],
    ["a zero USD rate", businessDayRows("0")],
    ["an object", { rows: [] }],
    ["a row without result", [{ cur_unit: "USD", deal_bas_r: "1,483.4" }]],
  ])("rejects an answer with %s as malformed", (_name, body) => {
    expect(() => interpretExchangeBody(body, searchDate)).toThrow(KoreaeximMalformedResponseError);
  });
});
