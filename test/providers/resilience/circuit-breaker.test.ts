import { describe, expect, it } from "vitest";
import { type BreakerState, CircuitBreaker } from "../../../src/providers/resilience/circuit-breaker";

const limits = {
  breakerWindowMs: 10_000,
  breakerAttemptsMin: 4,
  breakerFailureRateMin: 0.5,
  breakerOpenMs: 5_000,
  breakerHalfOpenProbesMax: 1,
};

function breakerWithTransitions(): { breaker: CircuitBreaker; transitions: BreakerState[] } {
  const transitions: BreakerState[] = [];
  return { breaker: new CircuitBreaker(limits, (state) => transitions.push(state)), transitions };
}

function attempt(breaker: CircuitBreaker, failed: boolean, atMs: number): void {
  breaker.record(breaker.acquire(atMs), failed, atMs);
}

describe("circuit breaker", () => {
  it("stays closed below the minimum attempts, whatever they did", () => {
    const { breaker } = breakerWithTransitions();
    for (let index = 0; index < 3; index++) attempt(breaker, true, 1_000 + index);
    expect(breaker.state(1_010)).toBe("closed");
    expect(breaker.allows(1_010)).toBe(true);
  });

  it("opens at the failure rate over the window, and lets nothing through while open", () => {
    const { breaker, transitions } = breakerWithTransitions();
    attempt(breaker, false, 1_000);
    attempt(breaker, true, 1_001);
    attempt(breaker, false, 1_002);
    expect(breaker.state(1_002)).toBe("closed");
    attempt(breaker, true, 1_003);
    expect(breaker.state(1_003)).toBe("open");
    expect(breaker.allows(1_003 + limits.breakerOpenMs - 1)).toBe(false);
    expect(transitions).toEqual(["open"]);
  });

  it("forgets failures older than the window", () => {
    const { breaker } = breakerWithTransitions();
    for (let index = 0; index < 3; index++) attempt(breaker, true, 1_000 + index);
    // Eleven seconds later the three failures have aged out: one more is one of one, below the minimum.
    attempt(breaker, true, 12_000);
    expect(breaker.state(12_000)).toBe("closed");
    expect(breaker.windowCounts(12_000)).toEqual({ attempts: 1, failures: 1 });
  });

  it("half-opens after the open interval: one probe at a time, a success closes it with a clean window", () => {
    const { breaker, transitions } = breakerWithTransitions();
    for (let index = 0; index < 4; index++) attempt(breaker, true, 1_000);
    const halfOpenAtMs = 1_000 + limits.breakerOpenMs;
    expect(breaker.state(halfOpenAtMs)).toBe("half-open");
    const probe = breaker.acquire(halfOpenAtMs);
    expect(probe).toEqual({ probe: true });
    expect(breaker.allows(halfOpenAtMs)).toBe(false);
    breaker.record(probe, false, halfOpenAtMs + 10);
    expect(breaker.state(halfOpenAtMs + 10)).toBe("closed");
    expect(breaker.windowCounts(halfOpenAtMs + 10)).toEqual({ attempts: 0, failures: 0 });
    expect(transitions).toEqual(["open", "half-open", "closed"]);
  });

  it("reopens when a probe fails, for another open interval", () => {
    const { breaker, transitions } = breakerWithTransitions();
    for (let index = 0; index < 4; index++) attempt(breaker, true, 1_000);
    const halfOpenAtMs = 1_000 + limits.breakerOpenMs;
    breaker.record(breaker.acquire(halfOpenAtMs), true, halfOpenAtMs);
    expect(breaker.state(halfOpenAtMs + limits.breakerOpenMs - 1)).toBe("open");
    expect(breaker.state(halfOpenAtMs + limits.breakerOpenMs)).toBe("half-open");
    expect(transitions).toEqual(["open", "half-open", "open", "half-open"]);
  });

  it("counts nothing for an attempt that says nothing of the endpoint (cancelled)", () => {
    const { breaker } = breakerWithTransitions();
    for (let index = 0; index < 10; index++) breaker.record(breaker.acquire(1_000), undefined, 1_000);
    expect(breaker.windowCounts(1_000)).toEqual({ attempts: 0, failures: 0 });
  });
});
