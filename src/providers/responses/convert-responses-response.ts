import { reportedFailureError } from "../http/transport-errors";
import { parseUpstreamReply } from "../http/upstream-reply";
import type { GenerationResult } from "../provider";
import { convertResponsesUsage } from "./convert-responses-usage";
import { mapResponsesFinishReason } from "./map-responses-finish-reason";
import { type Response, responseSchema } from "./responses-schemas";

/** A JSON response to the gateway's result: the text of every output_text part of every message item. */
export function convertResponsesResponse(reply: unknown): GenerationResult {
  const response = parseUpstreamReply(responseSchema, reply);
  if (response.status === "failed") throw reportedFailureError(response.error?.message);
  return {
    toolCalls: [],
    text: outputText(response),
    finishReason: mapResponsesFinishReason(response),
    usage: response.usage ? convertResponsesUsage(response.usage) : null,
  };
}

function outputText(response: Response): string {
  return response.output
    .filter((item) => item.type === "message")
    .flatMap((item) => item.content ?? [])
    .filter((part) => part.type === "output_text")
    .map((part) => part.text ?? "")
    .join("");
}
