import { parseUpstreamReply } from "../http/upstream-reply";
import { type FinishReason, type GenerationResult, UpstreamFailedError } from "../provider";
import { candidateToolCalls } from "./convert-generate-content-tool-calls";
import { convertGenerateContentUsage } from "./convert-generate-content-usage";
import { type GenerateContentResponse, generateContentResponseSchema } from "./generate-content-schemas";
import { mapGenerateContentFinishReason } from "./map-generate-content-finish-reason";

/** A JSON reply to the gateway's result. The gateway never asks for several candidates: the first is all. */
export function convertGenerateContentResponse(reply: unknown): GenerationResult {
  const response = parseUpstreamReply(generateContentResponseSchema, reply);
  // Every field is optional in the schema, so a reply that answers nothing must be caught here.
  if (!response.candidates?.length && !response.promptFeedback?.blockReason) {
    throw new UpstreamFailedError("malformed", "upstream reply has neither a candidate nor a block reason");
  }
  const toolCalls = candidateToolCalls(response);
  const finishReason = candidateFinishReason(response) ?? "other";
  return {
    toolCalls,
    text: candidateText(response),
    finishReason: withToolCalls(finishReason, toolCalls.length > 0),
    usage: response.usageMetadata ? convertGenerateContentUsage(response.usageMetadata) : null,
  };
}

/** The visible text of the first candidate: thought summaries are not output. */
export function candidateText(response: GenerateContentResponse): string {
  const parts = response.candidates?.[0]?.content?.parts ?? [];
  return parts
    .filter((part) => part.thought !== true)
    .map((part) => part.text ?? "")
    .join("");
}

/** The finish of the first candidate, or content_filter when the prompt was blocked before any candidate. */
export function candidateFinishReason(response: GenerateContentResponse): FinishReason | undefined {
  const finishReason = response.candidates?.[0]?.finishReason;
  if (finishReason) return mapGenerateContentFinishReason(finishReason);
  if (response.promptFeedback?.blockReason) return "content_filter";
  return undefined;
}

/** The protocol says STOP when the model stopped to have its calls run; the gateway says tool_calls. */
export function withToolCalls(finishReason: FinishReason, madeCalls: boolean): FinishReason {
  return madeCalls && finishReason === "stop" ? "tool_calls" : finishReason;
}
