import { upstreamAttemptErrors } from "../../ledger/events";
/**
 * One attempt at an upstream, as recorded on the request's settlement (UsageRecorded / UsageVoided) and
 * counted in the metrics. Names only: never an endpoint's URL or key.
 */
/** What can go wrong with an attempt: the ledger's list, since the settlement events store it. */
export const attemptErrors = upstreamAttemptErrors;
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
