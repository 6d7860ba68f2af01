import { describe, expect, it } from "vitest";
import {
  compactDateOf,
  fxRefreshSchedule,
  isIsoDate,
  nextSeoulRunAt,
  previousDate,
  seoulDateOf,
  startInstantOfSeoulDate,
} from "../../src/kernel/seoul-calendar";

describe("seoulDateOf", () => {
  it.each([
    ["2026-03-02T14:59:59.999Z", "2026-03-02"],
    ["2026-03-02T15:00:00.000Z", "2026-03-03"],
    ["2026-03-02T15:30:00.000Z", "2026-03-03"],
    ["2025-12-31T15:00:00.000Z", "2026-01-01"],
    ["2024-02-28T15:00:00.000Z", "2024-02-29"],
  ])("the instant %s falls on %s in Seoul", (instant, expected) => {
    // given an instant / when / then
    expect(seoulDateOf(new Date(instant))).toBe(expected);
  });

  it("rejects an invalid instant", () => {
    expect(() => seoulDateOf(new Date("not a date"))).toThrow(RangeError);
  });
});

describe("previousDate", () => {
  it.each([
    ["2026-03-03", "2026-03-02"],
    ["2026-03-01", "2026-02-28"],
    ["2024-03-01", "2024-02-29"],
    ["2026-01-01", "2025-12-31"],
  ])("the day before %s is %s", (date, expected) => {
    expect(previousDate(date)).toBe(expected);
  });

  it("rejects a date that does not exist", () => {
    expect(() => previousDate("2026-02-30")).toThrow(RangeError);
  });
});

describe("isIsoDate and compactDateOf", () => {
  it.each([
    ["2026-03-02", true],
    ["2024-02-29", true],
    ["2025-02-29", false],
    ["2026-3-2", false],
    ["20260302", false],
    ["2026-03-02T00:00:00Z", false],
  ])("%s is a calendar date: %s", (text, expected) => {
    expect(isIsoDate(text)).toBe(expected);
  });

  it("writes the bank's searchdate form", () => {
    expect(compactDateOf("2026-03-02")).toBe("20260302");
  });

  it("starts a Seoul date at 15:00 UTC the day before", () => {
    expect(startInstantOfSeoulDate("2026-03-03").toISOString()).toBe("2026-03-02T15:00:00.000Z");
  });
});

describe("nextSeoulRunAt and the refresh schedule", () => {
  it("runs at 00:05 KST", () => {
    expect(fxRefreshSchedule).toEqual({ pattern: "5 0 * * *", tz: "Asia/Seoul" });
  });

  it.each([
    ["2026-03-02T15:04:59.999Z", "2026-03-02T15:05:00.000Z"],
    ["2026-03-02T15:05:00.000Z", "2026-03-03T15:05:00.000Z"],
    ["2026-03-02T03:00:00.000Z", "2026-03-02T15:05:00.000Z"],
    ["2026-12-31T16:00:00.000Z", "2027-01-01T15:05:00.000Z"],
  ])("after %s the next 00:05 KST is %s", (now, expected) => {
    expect(nextSeoulRunAt(0, 5, new Date(now)).toISOString()).toBe(expected);
  });

  it("rejects a wall clock that does not exist", () => {
    expect(() => nextSeoulRunAt(24, 0, new Date())).toThrow(RangeError);
    expect(() => nextSeoulRunAt(0, 60, new Date())).toThrow(RangeError);
  });
});
