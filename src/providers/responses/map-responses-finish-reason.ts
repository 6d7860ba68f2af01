import type { FinishReason } from "../provider";
import type { ResponseOutcome } from "./responses-schemas";

type KnownIncompleteReason = "max_output_tokens" | "content_filter";

const incompleteReasons: Readonly<Record<KnownIncompleteReason, FinishReason>> = {
  max_output_tokens: "length",
  content_filter: "content_filter",
};

/**
 * The responses protocol has no finish reason: a response is "completed", or "incomplete" with a reason.
 * ("failed" never gets here: it is an error.) A completed response with function calls ended to have them
 * run: "tool_calls". Unknown statuses and reasons are "other".
 */
export function mapResponsesFinishReason(
  outcome: Pick<ResponseOutcome, "status" | "incomplete_details">,
  madeToolCalls: boolean,
): FinishReason {
  if (outcome.status === "completed") return madeToolCalls ? "tool_calls" : "stop";
  const reason = outcome.incomplete_details?.reason;
  if (outcome.status === "incomplete" && reason && Object.hasOwn(incompleteReasons, reason)) {
    return incompleteReasons[reason as KnownIncompleteReason];
  }
  return "other";
}
