import { assert } from "../../kernel/assert";

/**
 * Every bound on retrying an upstream (C13), named with its unit. The defaults are `resilienceLimitDefaults`
 * in src/kernel/limits.ts; config.ts lets an operator change each through the environment
 * (docs/upstream-resilience.md) and asserts their relations (`assertResilienceLimits`).
 */
export interface ResilienceLimits {
  /** Attempts at most per request, the first included, across every endpoint and fallback model. */
  attemptsMax: number;
  /** The first retry waits about this long; each further one twice as long, up to `backoffMaxMs`. */
  backoffBaseMs: number;
  backoffMaxMs: number;
  /**
   * Bounds everything before the first output: every attempt, backoff and `Retry-After` wait. An attempt
   * still without output at the deadline is cut. Output, once it flows, is not bounded by this.
   */
  requestDeadlineMs: number;
  /** The breaker judges an endpoint by the requests of this last stretch of time. */
  breakerWindowMs: number;
  /** Fewer requests than this in the window never open the breaker (a few unlucky requests are not news). */
  breakerRequestsMin: number;
  /** The breaker opens when at least this share (0..1) of the window's requests failed at the endpoint. */
  breakerFailureRateMin: number;
  /** An open endpoint gets only panic attempts for this long, then probes decide. */
  breakerOpenMs: number;
  /** Requests let through at once to a half-open endpoint; one success closes it, one failure reopens it. */
  breakerHalfOpenProbesMax: number;
}

/** Throws (at start) when the limits contradict each other: each retry waits from the base up to the maximum. */
export function assertResilienceLimits(limits: ResilienceLimits): ResilienceLimits {
  assert(
    limits.backoffBaseMs <= limits.backoffMaxMs,
    `backoffBaseMs (${limits.backoffBaseMs}) must be ≤ backoffMaxMs (${limits.backoffMaxMs})`,
  );
  return limits;
}
