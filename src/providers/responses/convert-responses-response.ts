import { reportedFailureError } from "../http/transport-errors";
import { parseUpstreamReply } from "../http/upstream-reply";
import type { GenerationResult, ToolCall } from "../provider";
import { convertResponsesUsage } from "./convert-responses-usage";
import { mapResponsesFinishReason } from "./map-responses-finish-reason";
import { functionCallItemSchema, type Response, responseSchema } from "./responses-schemas";

/**
 * A JSON response to the gateway's result: the text of every output_text part of every message item (and the
 * words of every refusal part), and
 * every function_call item as a call, in output order (the call's `call_id` is its id: it is what the next
 * request's function_call_output names).
 */
export function convertResponsesResponse(reply: unknown): GenerationResult {
  const response = parseUpstreamReply(responseSchema, reply);
  if (response.status === "failed") throw reportedFailureError(response.error?.message);
  const toolCalls = functionCalls(response);
  const refusal = partsOfType(response, "refusal")
    .map((part) => part.refusal ?? "")
    .join("");
  return {
    toolCalls,
    text: outputText(response),
    ...(refusal === "" ? {} : { refusal }),
    finishReason: mapResponsesFinishReason(response, toolCalls.length > 0),
    usage: response.usage ? convertResponsesUsage(response.usage) : null,
  };
}

function functionCalls(response: Response): ToolCall[] {
  return response.output
    .filter((item) => item.type === "function_call")
    .map((item) => {
      const call = parseUpstreamReply(functionCallItemSchema, item);
      return { id: call.call_id, name: call.name, arguments: call.arguments };
    });
}

function outputText(response: Response): string {
  return partsOfType(response, "output_text")
    .map((part) => part.text ?? "")
    .join("");
}

/** The content parts of that type in every message item, in output order. */
function partsOfType(response: Response, type: "output_text" | "refusal") {
  return response.output
    .filter((item) => item.type === "message")
    .flatMap((item) => item.content ?? [])
    .filter((part) => part.type === type);
}
