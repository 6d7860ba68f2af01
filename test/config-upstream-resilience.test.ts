import { describe, expect, it } from "vitest";
import { loadConfig } from "../src/config";
import { ConfigError } from "../src/kernel/config-error";
import { resilienceLimitDefaults } from "../src/kernel/limits";

/** The upstream retry and breaker limits (C13) come from UPSTREAM_* variables, each checked at start. */
describe("upstream resilience configuration", () => {
  it("defaults to the named limits", () => {
    expect(loadConfig({}).upstreamResilience).toEqual(resilienceLimitDefaults);
  });

  it("reads every limit from its variable", () => {
    expect(
      loadConfig({
        UPSTREAM_ATTEMPTS_MAX: "3",
        UPSTREAM_BACKOFF_BASE_MS: "50",
        UPSTREAM_BACKOFF_MAX_MS: "500",
        UPSTREAM_REQUEST_DEADLINE_MS: "30000",
        UPSTREAM_BREAKER_WINDOW_MS: "60000",
        UPSTREAM_BREAKER_REQUESTS_MIN: "5",
        UPSTREAM_BREAKER_FAILURE_RATE: "0.25",
        UPSTREAM_BREAKER_OPEN_MS: "15000",
        UPSTREAM_BREAKER_HALF_OPEN_PROBES: "2",
      }).upstreamResilience,
    ).toEqual({
      attemptsMax: 3,
      backoffBaseMs: 50,
      backoffMaxMs: 500,
      requestDeadlineMs: 30_000,
      breakerWindowMs: 60_000,
      breakerRequestsMin: 5,
      breakerFailureRateMin: 0.25,
      breakerOpenMs: 15_000,
      breakerHalfOpenProbesMax: 2,
    });
  });

  it.each([
    ["UPSTREAM_ATTEMPTS_MAX", "0"],
    ["UPSTREAM_ATTEMPTS_MAX", "many"],
    ["UPSTREAM_BREAKER_FAILURE_RATE", "1.5"],
    ["UPSTREAM_REQUEST_DEADLINE_MS", "10"],
  ])("stops with one line naming %s=%s", (variable, value) => {
    const failure = (() => {
      try {
        loadConfig({ [variable]: value });
      } catch (error) {
        return error;
      }
    })();
    expect(failure).toBeInstanceOf(ConfigError);
    expect((failure as Error).message).toContain(variable);
  });
});
