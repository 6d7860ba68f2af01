import { describe, expect, it } from "vitest";
import { keyLimitWindowOf } from "../../../src/billing/alerts/key-limit-alerts";

/**
 * `key.limit_reached` is sent once per key and window (C14): the window is the one the refused limit counts
 * in — the minute for the rate limit, the Seoul month for the monthly spend limit, the key's lifetime for
 * the total. Two refusals in one window share its dedupe key; a refusal in the next window is told again.
 */

describe("a key limit's alert window", () => {
  it("given monthly spend refusals either side of a Seoul month's end, then each month is a window of its own, reset at the next Seoul midnight of the 1st", () => {
    const lastOfJanuary = keyLimitWindowOf("monthly-spend", new Date("2026-01-31T14:59:59.999Z"));
    const firstOfJanuary = keyLimitWindowOf("monthly-spend", new Date("2025-12-31T15:00:00.000Z"));
    const firstOfFebruary = keyLimitWindowOf("monthly-spend", new Date("2026-01-31T15:00:00.000Z"));
    const nextJanuary = keyLimitWindowOf("monthly-spend", new Date("2027-01-15T00:00:00.000Z"));

    expect(lastOfJanuary).toEqual({
      window: "monthly-spend:2026-01",
      resetsAt: new Date("2026-01-31T15:00:00.000Z"),
    });
    expect(firstOfJanuary.window).toBe(lastOfJanuary.window);
    expect(firstOfFebruary).toEqual({
      window: "monthly-spend:2026-02",
      resetsAt: new Date("2026-02-28T15:00:00.000Z"),
    });
    expect(nextJanuary.window).toBe("monthly-spend:2027-01");
  });

  it("given rate refusals either side of a minute's end, then each minute is a window of its own, reset at the next minute", () => {
    const start = keyLimitWindowOf("rate", new Date("2026-03-05T12:00:00.000Z"));
    const end = keyLimitWindowOf("rate", new Date("2026-03-05T12:00:59.999Z"));
    const next = keyLimitWindowOf("rate", new Date("2026-03-05T12:01:00.000Z"));
    const nextHour = keyLimitWindowOf("rate", new Date("2026-03-05T13:00:30.000Z"));

    expect(start).toEqual({
      window: "rate:2026-03-05T12:00",
      resetsAt: new Date("2026-03-05T12:01:00.000Z"),
    });
    expect(end).toEqual(start);
    expect(next).toEqual({ window: "rate:2026-03-05T12:01", resetsAt: new Date("2026-03-05T12:02:00.000Z") });
    expect(new Set([start.window, next.window, nextHour.window]).size).toBe(3);
  });

  it("given total spend refusals years apart, then they are one window that never resets", () => {
    expect(keyLimitWindowOf("total-spend", new Date("2026-01-01T00:00:00.000Z"))).toEqual({
      window: "total-spend",
      resetsAt: null,
    });
    expect(keyLimitWindowOf("total-spend", new Date("2030-06-15T00:00:00.000Z")).window).toBe("total-spend");
  });
});
