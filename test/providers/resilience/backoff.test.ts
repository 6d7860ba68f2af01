import { describe, expect, it } from "vitest";
import { resilienceLimitDefaults } from "../../../src/kernel/limits";
import { backoffDelayMs } from "../../../src/providers/resilience/backoff";

/** C13's backoff: exponential from the base, capped at the maximum, half of each step at random. */

const limits = { backoffBaseMs: 100, backoffMaxMs: 1_000 };
const retries = [1, 2, 3, 4, 5, 6, 7, 8];
const highest = () => 1 - Number.EPSILON;

describe("backoff before a retry", () => {
  it("doubles from the base each retry and stops doubling at the maximum", () => {
    expect(retries.map((retry) => backoffDelayMs(retry, limits, highest))).toEqual([
      100, 200, 400, 800, 1_000, 1_000, 1_000, 1_000,
    ]);
  });

  it("waits at least half of each step, however the random half falls", () => {
    expect(retries.map((retry) => backoffDelayMs(retry, limits, () => 0))).toEqual([
      50, 100, 200, 400, 500, 500, 500, 500,
    ]);
  });

  it("spreads the requests an outage failed together over the random half of the step", () => {
    const delays = Array.from({ length: 11 }, (_, tenth) => backoffDelayMs(3, limits, () => tenth / 10));
    expect(delays).toEqual([200, 220, 240, 260, 280, 300, 320, 340, 360, 380, 400]);
  });

  it("never waits past the maximum, even at the attempts' default bound and far beyond it", () => {
    for (const retry of [resilienceLimitDefaults.attemptsMax - 1, 64, 2_000])
      expect(backoffDelayMs(retry, resilienceLimitDefaults, highest)).toBe(
        resilienceLimitDefaults.backoffMaxMs,
      );
  });

  it.each([0, -1, 1.5])("refuses retry %s: the first retry is 1", (retry) => {
    expect(() => backoffDelayMs(retry, limits, Math.random)).toThrow(/a backoff is for a retry/);
  });
});
