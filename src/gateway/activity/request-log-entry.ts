import type { AccountReference, generationEndpoints, UsageOutcome, UsageTokens } from "../../ledger/events";
import { type ApiError, errorBodyOf } from "../api-error";

export type GenerationEndpoint = (typeof generationEndpoints)[number];

/**
 * One generation request as the activity log keeps it (migration 10's `request_log`), and how its outcome
 * is told from what the edge saw.
 */

export const requestOutcomes = ["served", "refused", "failed", "cut"] as const;
/**
 * served: answered in full; refused: the gateway said no before the upstream answered (validation, an
 * unknown model, credit, a key limit); failed: the upstream rejected or failed it, or the ledger was down;
 * cut: the client left before the end, or the gateway cut it (at shutdown, at the stream deadline, or its
 * hold released while its process was presumed dead).
 */
export type RequestOutcome = (typeof requestOutcomes)[number];

export interface RequestLogEntry {
  requestId: string;
  startedAt: Date;
  account: AccountReference;
  keyId: string;
  keyPreview: string | null;
  /** The `model` the body named; null when the body could not be read that far. */
  model: string | null;
  /**
   * The model that answered in the requested one's place (a configured fallback): the one its usage was
   * recorded and charged as. Null when the requested model answered, or none did.
   */
  answeredBy: string | null;
  endpoint: GenerationEndpoint;
  streamed: boolean | null;
  /** As answered; 499 when the client left before any header was sent (nginx's "client closed request"). */
  httpStatus: number;
  outcome: RequestOutcome;
  latencyMs: number;
  timeToFirstTokenMs: number | null;
  /** As recorded for billing; null when nothing was produced. */
  tokens: UsageTokens | null;
  /**
   * The error body's `error.type` (a stream's error event's), or `client_disconnected` for a request its
   * client left; null when served.
   */
  errorType: string | null;
  /** The reply's body id (`chatcmpl-…`, `resp-…`); null when the request never got that far. */
  responseId: string | null;
}

export const clientClosedRequestStatus = 499;

/** What the edge saw of a request by the time its response closed. */
export interface ObservedEnd {
  /** Whether the whole response was handed to the socket (false: the client left, or it was cut). */
  finished: boolean;
  /** How the generation path settled it, when it got that far. */
  generationOutcome: UsageOutcome | undefined;
  /** The error answered, when one was. */
  error: ApiError | undefined;
}

/** The settlements of requests the gateway itself ended early: a shutdown, a deadline, a released hold. */
const gatewayCuts: ReadonlySet<UsageOutcome> = new Set(["shutdown", "deadline-exceeded", "interrupted"]);

export function requestOutcomeOf(end: ObservedEnd): { outcome: RequestOutcome; errorType: string | null } {
  if (end.generationOutcome === "upstream-failed")
    return { outcome: "failed", errorType: errorTypeOf(end.error) ?? "model_processing_error" };
  // Whatever was answered instead (a stream's error event, or an error for a JSON answer), the gateway cut it.
  if (end.generationOutcome !== undefined && gatewayCuts.has(end.generationOutcome))
    return { outcome: "cut", errorType: errorTypeOf(end.error) };
  if (end.error !== undefined) {
    // 300: the upstream rejected or failed it, or the ledger was unavailable; every other code is a refusal.
    const outcome = end.error.applicationCode === 300 ? "failed" : "refused";
    return { outcome, errorType: errorTypeOf(end.error) };
  }
  if (!end.finished || end.generationOutcome === "client-disconnected")
    return { outcome: "cut", errorType: "client_disconnected" };
  return { outcome: "served", errorType: null };
}

function errorTypeOf(error: ApiError | undefined): string | null {
  return error === undefined ? null : errorBodyOf(error).error.type;
}
