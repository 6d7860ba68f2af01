import { describe, expect, it } from "vitest";
import { HeartbeatWatch } from "../../../src/billing/holds/orphan-hold-settlement";
import {
  assertSettlementTimings,
  holdConfirmationMaxAgeMs,
  settableTimingsMinMs,
} from "../../../src/billing/holds/settlement-timings";
import type { UsageAuthorizationRequest } from "../../../src/billing/holds/usage-authorizations";
import { loadConfig } from "../../../src/config";
import { ConfigError } from "../../../src/kernel/config-error";
import { defaultSettlementTimings } from "../../../src/kernel/limits";
import { generationHoldsWithFakes } from "../../support/generation-holds-with-fakes";
import { dollarPerMillionPricing, holdRequestOf } from "../../support/hold-fixtures";

/**
 * The timings C10's promises rest on are checked together at start, and the sweeper's watch over the
 * heartbeats is unbroken only while its reads keep coming: a failed read or a gap starts it anew.
 */

describe("settlement timings", () => {
  it("given the defaults, then they hold together, and a hold's confirmation lets output flow for 6 s", () => {
    expect(assertSettlementTimings(defaultSettlementTimings)).toEqual(defaultSettlementTimings);
    expect(holdConfirmationMaxAgeMs(defaultSettlementTimings)).toBe(6_000);
  });

  it.each([
    [{ heartbeatIntervalMs: 4_000 }, "heartbeatIntervalMs × 3 must be ≤ presumedDeadAfterMs"],
    [{ progressIntervalMs: 3_000, holdLifetimeMs: 6_000 }, "progressIntervalMs × 3 must be ≤ holdLifetimeMs"],
    [{ orphanSweepIntervalMs: 6_000 }, "orphanSweepIntervalMs must be < observationGapMaxMs"],
    [{ observationGapMaxMs: 20_000 }, "observationGapMaxMs must be < presumedDeadAfterMs"],
    [{ streamDeadlineMs: 0 }, "streamDeadlineMs must be a positive whole number"],
    // A hold's confirmation would age out between two healthy records: output would wait for nothing.
    [
      { presumedDeadAfterMs: 7_000, observationGapMaxMs: 4_000, orphanSweepIntervalMs: 2_000 },
      "heartbeatIntervalMs + progressIntervalMs × 3 must be ≤ presumedDeadAfterMs",
    ],
  ])("given %o, then start is refused naming the relation", (change, message) => {
    expect(() => assertSettlementTimings({ ...defaultSettlementTimings, ...change })).toThrow(message);
  });

  it("given timings from the environment below what the fixed ones need, then the configuration error names the variable, its value and the least it may be", () => {
    expect(() => loadConfig({ HOLD_LIFETIME_MS: "3000" })).toThrow(ConfigError);
    expect(() => loadConfig({ HOLD_LIFETIME_MS: "3000" })).toThrow(
      "invalid configuration: HOLD_LIFETIME_MS 3000 must be at least 6000 (what heartbeats every 2000 ms and progress records every 2000 ms need)",
    );
    expect(() => loadConfig({ GATEWAY_PRESUMED_DEAD_AFTER_MS: "7000" })).toThrow(
      "invalid configuration: GATEWAY_PRESUMED_DEAD_AFTER_MS 7000 must be at least 8000 (what heartbeats every 2000 ms and progress records every 2000 ms need)",
    );
    expect(loadConfig({ STREAM_DEADLINE_MS: "60000" }).settlementTimings.streamDeadlineMs).toBe(60_000);
    expect(() => loadConfig({ SHUTDOWN_DRAIN_MS: "ten" })).toThrow(/SHUTDOWN_DRAIN_MS/);
  });

  it.each(["holdLifetimeMs", "presumedDeadAfterMs"] as const)(
    "given the fixed timings, then %s holds at the least the configuration accepts, and not 1 ms below",
    (name) => {
      const leastMs = settableTimingsMinMs(defaultSettlementTimings)[name];
      expect(() => assertSettlementTimings({ ...defaultSettlementTimings, [name]: leastMs })).not.toThrow();
      expect(() => assertSettlementTimings({ ...defaultSettlementTimings, [name]: leastMs - 1 })).toThrow();
      const variable = name === "holdLifetimeMs" ? "HOLD_LIFETIME_MS" : "GATEWAY_PRESUMED_DEAD_AFTER_MS";
      expect(loadConfig({ [variable]: String(leastMs) }).settlementTimings[name]).toBe(leastMs);
    },
  );
});

describe("the sweeper's watch over the heartbeats", () => {
  it("given reads every 2 s, then the watch grows with them", () => {
    const watch = new HeartbeatWatch(5_000);
    for (let atMs = 0; atMs <= 12_000; atMs += 2_000) watch.read(atMs);
    expect(watch.watchedMs).toBe(12_000);
  });

  it("given a failed read, then the watch starts anew at the next read", () => {
    const watch = new HeartbeatWatch(5_000);
    watch.read(0);
    watch.read(8_000 - 4_000);
    watch.failed();
    expect(watch.watchedMs).toBe(0);
    watch.read(8_000);
    watch.read(10_000);
    expect(watch.watchedMs).toBe(2_000);
  });

  it("given a gap longer than allowed between two reads (a pause, an outage between sweeps), then the watch starts anew", () => {
    const watch = new HeartbeatWatch(5_000);
    watch.read(0);
    watch.read(2_000);
    watch.read(9_000);
    expect(watch.watchedMs).toBe(0);
    watch.read(11_000);
    expect(watch.watchedMs).toBe(2_000);
  });
});

describe("a hold's lifetime", () => {
  it("given a request, then its hold expires the hold's lifetime after the request started, unless renewed", async () => {
    // Given a gateway whose holds last 90 s unrenewed
    const asked: UsageAuthorizationRequest[] = [];
    const holds = generationHoldsWithFakes({
      authorizer: {
        isSetApart: () => false,
        authorize: async (request) => {
          asked.push(request);
          return { kind: "held", holdWon: "3.5", availableWon: "96.5" };
        },
      },
      pricing: {
        pricingAt: async () => [dollarPerMillionPricing],
        pricingEachAt: async () => [dollarPerMillionPricing],
      },
      availableWon: "100",
      holdLifetimeMs: 90_000,
    });
    const request = holdRequestOf("req_lifetime");

    // When its hold is placed
    await holds.begin(request).placed;

    // Then the sweep may settle it 90 s after the request started (C10: no hold outlives its request by more)
    expect(asked.map((authorization) => authorization.data.expiresAt)).toEqual([
      new Date(request.startedAt.getTime() + 90_000).toISOString(),
    ]);
  });
});
