import { runningTotalsOf } from "../billable-reported-usage";
import type { ServerSentEvent } from "../http/server-sent-events";
import { reportedFailureError } from "../http/transport-errors";
import { hasErrorMember, messageOf } from "../http/upstream-error-message";
import { parseUpstreamJson, parseUpstreamReply } from "../http/upstream-reply";
import type { FinishReason, GenerationStreamPart, ReportedUsage } from "../provider";
import { convertEventStream } from "../stream-conversion";
import { chatCompletionChunkSchema } from "./chat-completions-schemas";
import { ToolCallDeltaConversion } from "./convert-chat-completions-tool-call-deltas";
import { convertChatCompletionsUsage } from "./convert-chat-completions-usage";
import { mapChatCompletionsFinishReason } from "./map-chat-completions-finish-reason";

const doneMarker = "[DONE]";

/**
 * Chat-completion chunks to stream parts. The finish reason arrives in one chunk and the usage in a later
 * one (asked for by `stream_options.include_usage`), so both are held and yielded after the last delta.
 * Tool calls stream as indexed deltas (see ToolCallDeltaConversion).
 */
export function convertChatCompletionsStream(
  batches: AsyncIterable<readonly ServerSentEvent[]>,
): AsyncGenerator<GenerationStreamPart[]> {
  let finishReason: FinishReason | undefined;
  let usage: ReportedUsage | null = null;
  let done = false;
  const toolCalls = new ToolCallDeltaConversion();
  return convertEventStream(batches, {
    convert(event, parts) {
      // Read on to the end of the body after [DONE] rather than stop, so the socket stays reusable.
      if (done) return;
      if (event.data === doneMarker) {
        done = true;
        return;
      }
      const payload = parseUpstreamJson(event.data);
      if (hasErrorMember(payload)) throw reportedFailureError(messageOf(payload));
      const chunk = parseUpstreamReply(chatCompletionChunkSchema, payload);
      const choice = chunk.choices?.[0];
      if (choice?.delta?.content) parts.push({ type: "text-delta", text: choice.delta.content });
      if (choice?.delta?.refusal) parts.push({ type: "refusal-delta", text: choice.delta.refusal });
      if (choice?.delta?.tool_calls) toolCalls.convert(choice.delta.tool_calls, parts);
      if (choice?.finish_reason) finishReason = mapChatCompletionsFinishReason(choice.finish_reason);
      // Usually in one chunk; an upstream that reports running totals in several is billed their highest.
      if (chunk.usage) usage = runningTotalsOf(usage, convertChatCompletionsUsage(chunk.usage));
    },
    outcome: () => ({ usage, finishReason }),
  });
}
