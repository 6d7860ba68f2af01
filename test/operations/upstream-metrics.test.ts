import { describe, expect, it } from "vitest";
import { metricsText } from "../../src/kernel/metrics-registry";
import { attemptOutcomeOf, upstreamMetrics } from "../../src/operations/upstream-metrics";
import type { UpstreamAttempt } from "../../src/providers/resilience/upstream-attempt";
import { sampleValue } from "./prometheus-text";

/**
 * The outcome label of an upstream attempt (C13) is one of a closed set, the one its help names: the status
 * class, 429 apart from the other 4xx (it is retried, and its own alert's subject), or what went wrong.
 */

const attempt = (status: number | null, error: UpstreamAttempt["error"]): UpstreamAttempt => ({
  endpoint: "outcome-test-east",
  model: "outcome-test-model",
  status,
  error,
  durationMs: 12,
});

describe("upstream attempt outcomes", () => {
  it.each([
    [200, null, "2xx"],
    [429, "status", "429"],
    [400, "status", "4xx"],
    [404, "status", "4xx"],
    [499, "status", "4xx"],
    [500, "status", "5xx"],
    [503, "status", "5xx"],
    [529, "status", "5xx"],
    [null, "connection", "connection"],
    [null, "timeout", "timeout"],
  ] as const)("given an attempt answered %s (%s), then its outcome is %s", (status, error, outcome) => {
    expect(attemptOutcomeOf(attempt(status, error))).toBe(outcome);
  });

  it("given a throttled attempt and its retry served, then each is counted under its own outcome, the retry once", async () => {
    const labels = { upstream_endpoint: "outcome-test-east", model: "outcome-test-model" };
    const before = (await metricsText()).text;
    upstreamMetrics.attempted(attempt(429, "status"), false);
    upstreamMetrics.attempted(attempt(200, null), true);
    const after = (await metricsText()).text;
    const delta = (name: string, extra: Record<string, string> = {}) =>
      sampleValue(after, name, { ...labels, ...extra }) - sampleValue(before, name, { ...labels, ...extra });
    expect(delta("won_gateway_upstream_attempts_total", { outcome: "429" })).toBe(1);
    expect(delta("won_gateway_upstream_attempts_total", { outcome: "4xx" })).toBe(0);
    expect(delta("won_gateway_upstream_attempts_total", { outcome: "2xx" })).toBe(1);
    expect(delta("won_gateway_upstream_attempt_duration_seconds_count", { outcome: "429" })).toBe(1);
    expect(delta("won_gateway_upstream_retries_total")).toBe(1);
  });
});
