import { describe, expect, it } from "vitest";
import { type BreakerState, CircuitBreaker } from "../../../src/providers/resilience/circuit-breaker";

const limits = {
  breakerWindowMs: 10_000,
  breakerRequestsMin: 4,
  breakerFailureRateMin: 0.5,
  breakerOpenMs: 5_000,
  breakerHalfOpenProbesMax: 1,
};

function breakerWithTransitions(): { breaker: CircuitBreaker; transitions: BreakerState[] } {
  const transitions: BreakerState[] = [];
  return { breaker: new CircuitBreaker(limits, (state) => transitions.push(state)), transitions };
}

/** One request with one attempt here, and what it came to. */
function request(breaker: CircuitBreaker, failed: boolean, atMs: number): void {
  breaker.recordAttempt(breaker.acquire(atMs), failed, atMs);
  breaker.recordRequest(failed, atMs);
}

function opened(): { breaker: CircuitBreaker; transitions: BreakerState[]; openedAtMs: number } {
  const { breaker, transitions } = breakerWithTransitions();
  for (let index = 0; index < limits.breakerRequestsMin; index++) request(breaker, true, 1_000);
  expect(breaker.state(1_000)).toBe("open");
  return { breaker, transitions, openedAtMs: 1_000 };
}

describe("circuit breaker", () => {
  it("stays closed below the minimum requests, whatever they did", () => {
    const { breaker } = breakerWithTransitions();
    for (let index = 0; index < 3; index++) request(breaker, true, 1_000 + index);
    expect(breaker.state(1_010)).toBe("closed");
    expect(breaker.allows(1_010)).toBe(true);
  });

  it("opens at the failure rate of requests over the window, and lets no ordinary attempt through while open", () => {
    const { breaker, transitions } = breakerWithTransitions();
    request(breaker, false, 1_000);
    request(breaker, true, 1_001);
    request(breaker, false, 1_002);
    expect(breaker.state(1_002)).toBe("closed");
    request(breaker, true, 1_003);
    expect(breaker.state(1_003)).toBe("open");
    expect(breaker.allows(1_003 + limits.breakerOpenMs - 1)).toBe(false);
    expect(() => breaker.acquire(1_004)).toThrow(/refuses/);
    expect(transitions).toEqual(["open"]);
  });

  it("counts attempts a retry on the same endpoint then served as nothing against it", () => {
    const { breaker } = breakerWithTransitions();
    // Twenty requests, each failing its first attempt and served by its second: half the attempts failed.
    for (let index = 0; index < 20; index++) {
      const atMs = 1_000 + index;
      breaker.recordAttempt(breaker.acquire(atMs), true, atMs);
      breaker.recordAttempt(breaker.acquire(atMs), false, atMs);
      breaker.recordRequest(false, atMs);
    }
    expect(breaker.state(1_100)).toBe("closed");
    expect(breaker.windowCounts(1_100)).toEqual({ requests: 20, failures: 0 });
  });

  it("forgets failures older than the window", () => {
    const { breaker } = breakerWithTransitions();
    for (let index = 0; index < 3; index++) request(breaker, true, 1_000 + index);
    // Eleven seconds later the three failures have aged out: one more is one of one, below the minimum.
    request(breaker, true, 12_000);
    expect(breaker.state(12_000)).toBe("closed");
    expect(breaker.windowCounts(12_000)).toEqual({ requests: 1, failures: 1 });
  });

  it("says how long until the next probe while open", () => {
    const { breaker, openedAtMs } = opened();
    expect(breaker.reopensInMs(openedAtMs + 1_500)).toBe(limits.breakerOpenMs - 1_500);
    expect(breaker.reopensInMs(openedAtMs + limits.breakerOpenMs)).toBe(0);
  });

  it("half-opens after the open interval: one probe at a time, a success closes it with a clean window", () => {
    const { breaker, transitions, openedAtMs } = opened();
    const halfOpenAtMs = openedAtMs + limits.breakerOpenMs;
    expect(breaker.state(halfOpenAtMs)).toBe("half-open");
    const probe = breaker.acquire(halfOpenAtMs);
    expect(probe).toEqual({ kind: "probe" });
    expect(breaker.allows(halfOpenAtMs)).toBe(false);
    breaker.recordAttempt(probe, false, halfOpenAtMs + 10);
    expect(breaker.state(halfOpenAtMs + 10)).toBe("closed");
    expect(breaker.windowCounts(halfOpenAtMs + 10)).toEqual({ requests: 0, failures: 0 });
    expect(transitions).toEqual(["open", "half-open", "closed"]);
  });

  it("reopens when a probe fails, for another open interval", () => {
    const { breaker, transitions, openedAtMs } = opened();
    const halfOpenAtMs = openedAtMs + limits.breakerOpenMs;
    breaker.recordAttempt(breaker.acquire(halfOpenAtMs), true, halfOpenAtMs);
    expect(breaker.state(halfOpenAtMs + limits.breakerOpenMs - 1)).toBe("open");
    expect(breaker.state(halfOpenAtMs + limits.breakerOpenMs)).toBe("half-open");
    expect(transitions).toEqual(["open", "half-open", "open", "half-open"]);
  });

  it("lets a panic attempt through while open: its success closes the breaker, its failure keeps the open period", () => {
    const failing = opened();
    failing.breaker.recordAttempt(failing.breaker.acquire(2_000, true), true, 2_000);
    expect(failing.breaker.state(2_000)).toBe("open");
    expect(failing.breaker.reopensInMs(2_000)).toBe(failing.openedAtMs + limits.breakerOpenMs - 2_000);
    expect(failing.breaker.lastFailedAtMs).toBe(2_000);

    const recovered = opened();
    const permit = recovered.breaker.acquire(2_000, true);
    expect(permit).toEqual({ kind: "panic" });
    recovered.breaker.recordAttempt(permit, false, 2_010);
    expect(recovered.breaker.state(2_010)).toBe("closed");
    expect(recovered.transitions).toEqual(["open", "closed"]);
  });

  it("counts nothing for an attempt that says nothing of the endpoint (cancelled)", () => {
    const { breaker } = breakerWithTransitions();
    for (let index = 0; index < 10; index++) breaker.recordAttempt(breaker.acquire(1_000), undefined, 1_000);
    expect(breaker.windowCounts(1_000)).toEqual({ requests: 0, failures: 0 });
    expect(breaker.lastFailedAtMs).toBe(Number.NEGATIVE_INFINITY);
  });
});
