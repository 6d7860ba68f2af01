/**
 * Every bound on retrying an upstream (C13), named with its unit, in one place. The defaults are here;
 * config.ts lets an operator change each through the environment (docs/upstream-resilience.md).
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
  /** The breaker judges an endpoint by the attempts of this last stretch of time. */
  breakerWindowMs: number;
  /** Fewer attempts than this in the window never open the breaker (a few unlucky requests are not news). */
  breakerAttemptsMin: number;
  /** The breaker opens when at least this share (0..1) of the window's attempts failed. */
  breakerFailureRateMin: number;
  /** An open endpoint gets no traffic for this long, then probes decide. */
  breakerOpenMs: number;
  /** Requests let through at once to a half-open endpoint; one success closes it, one failure reopens it. */
  breakerHalfOpenProbesMax: number;
}

export const resilienceLimitDefaults: Readonly<ResilienceLimits> = Object.freeze({
  // 8: with 45% of attempts failing independently (the chaos test), 0.45^8 ≈ 0.17% of requests still fail.
  attemptsMax: 8,
  backoffBaseMs: 100,
  backoffMaxMs: 2_000,
  // The upstream's own 10-minute answer timeout: a long JSON generation is not cut by the deadline.
  requestDeadlineMs: 600_000,
  // Long enough to judge an endpoint by a few requests' retries (8 attempts take about 6 s at most), so an
  // endpoint that is down opens within three requests even on a quiet gateway.
  breakerWindowMs: 30_000,
  breakerAttemptsMin: 10,
  breakerFailureRateMin: 0.5,
  breakerOpenMs: 5_000,
  breakerHalfOpenProbesMax: 1,
});
