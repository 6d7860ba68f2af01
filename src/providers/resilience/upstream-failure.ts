import { UpstreamFailedError, UpstreamRejectedError } from "../provider";
import type { AttemptError } from "./upstream-attempt";

/** Statuses C13 retries besides 429: the upstream (or a proxy in front of it) failed, not the request. */
const retriedFailureStatuses: ReadonlySet<number> = new Set([500, 502, 503, 504, 529]);

/** What one failed attempt means for the request (retry?) and for its endpoint (a strike?). */
export interface AttemptFailure {
  error: AttemptError;
  status: number | null;
  /** C13: connection refused or reset, timeout to first byte, 429, 500, 502, 503, 504, 529. */
  retryable: boolean;
  /**
   * Counts against the endpoint's breaker: it did not serve. A 429 does not (the endpoint is up and says
   * when to come back), nor does a 4xx (the request's fault) or a failure reported inside a 200 that
   * stands for no status.
   */
  breakerFailure: boolean;
  /** The upstream's `Retry-After`, from the moment it answered. */
  retryAfterMs: number | undefined;
}

/** Classifies what an adapter threw; undefined: not an upstream failure (a bug, a cancellation). */
export function attemptFailureOf(error: unknown): AttemptFailure | undefined {
  if (error instanceof UpstreamRejectedError) {
    const throttled = error.upstreamStatus === 429;
    return {
      error: "status",
      status: error.upstreamStatus,
      retryable: throttled,
      breakerFailure: false,
      retryAfterMs: throttled ? error.retryAfterMs : undefined,
    };
  }
  if (!(error instanceof UpstreamFailedError)) return undefined;
  switch (error.reason) {
    case "status":
      if (error.upstreamStatus === undefined)
        return {
          error: "reported",
          status: 200,
          retryable: false,
          breakerFailure: false,
          retryAfterMs: undefined,
        };
      return {
        error: "status",
        status: error.upstreamStatus,
        retryable: retriedFailureStatuses.has(error.upstreamStatus),
        breakerFailure: true,
        // C13 honours it on every retried status: a 503 or 529 says when the upstream expects to be back.
        retryAfterMs: retriedFailureStatuses.has(error.upstreamStatus) ? error.retryAfterMs : undefined,
      };
    case "timeout":
    case "connection":
      return {
        error: error.reason,
        status: null,
        retryable: true,
        breakerFailure: true,
        retryAfterMs: undefined,
      };
    case "malformed":
      return {
        error: "malformed",
        status: null,
        retryable: false,
        breakerFailure: true,
        retryAfterMs: undefined,
      };
    case "unavailable":
      return undefined;
    default: {
      const unreachable: never = error.reason;
      throw new Error(`unknown upstream failure ${String(unreachable)}`);
    }
  }
}
