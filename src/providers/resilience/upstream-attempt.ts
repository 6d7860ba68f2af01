/**
 * One attempt at an upstream, as recorded on the request's settlement (UsageRecorded / UsageVoided) and
 * counted in the metrics. Names only: never an endpoint's URL or key.
 */
export const attemptErrors = [
  /** Could not connect, or the connection was reset or closed before the reply was complete. */
  "connection",
  /** No answer (or no first byte) in time. */
  "timeout",
  /** An answer that does not follow the protocol. */
  "malformed",
  /** A non-2xx HTTP status (`status` says which). */
  "status",
  /** A 200 reply that reported a failure (an error event, a failed response). */
  "reported",
  /** Cut at the request's deadline before any output. */
  "deadline",
  /** The client went away, or its hold was refused, during the attempt. */
  "cancelled",
] as const;
export type AttemptError = (typeof attemptErrors)[number];

export interface UpstreamAttempt {
  /** The endpoint's configured name (e.g. `alpha`, `alpha-east`). */
  endpoint: string;
  /** The model slug attempted: the requested one, or a configured fallback. */
  model: string;
  /** The HTTP status the upstream answered with; null when none came (connection, timeout). */
  status: number | null;
  /** Null for the attempt that answered. */
  error: AttemptError | null;
  /** From sending to the answer (JSON) or the first output (stream), or to the failure. */
  durationMs: number;
}
