import type { ServerSentEvent } from "../http/server-sent-events";
import { reportedFailureError } from "../http/transport-errors";
import { hasErrorMember, messageOf } from "../http/upstream-error-message";
import { parseUpstreamJson, parseUpstreamReply } from "../http/upstream-reply";
import type { FinishReason, GenerationStreamPart, ReportedUsage } from "../provider";
import { convertEventStream } from "../stream-conversion";
import { candidateFinishReason, candidateText, withToolCalls } from "./convert-generate-content-response";
import { candidateToolCalls } from "./convert-generate-content-tool-calls";
import { convertGenerateContentUsage, mergeUsageMetadata } from "./convert-generate-content-usage";
import { generateContentResponseSchema, type UsageMetadata } from "./generate-content-schemas";
import { mapGenerateContentErrorStatus } from "./map-generate-content-error-status";

/**
 * `:streamGenerateContent?alt=sse` chunks to stream parts. Every chunk is a whole response holding the next
 * piece of text; usage metadata is repeated with running totals, so the highest values reported count (C7,
 * `mergeUsageMetadata`), and its prompt counts go with the first output (for a stream cut before its end).
 * An upstream that fails mid-stream sends a chunk with an `error` member. A function call arrives whole in
 * one chunk: it becomes a start and one delta carrying all its arguments, indexed among the reply's calls.
 */
export function convertGenerateContentStream(
  batches: AsyncIterable<readonly ServerSentEvent[]>,
): AsyncGenerator<GenerationStreamPart[]> {
  let finishReason: FinishReason | undefined;
  let usageMetadata: UsageMetadata | undefined;
  let usage: ReportedUsage | null = null;
  let callCount = 0;
  return convertEventStream(batches, {
    convert(event, parts) {
      const payload = parseUpstreamJson(event.data);
      if (hasErrorMember(payload))
        throw reportedFailureError(messageOf(payload), mapGenerateContentErrorStatus(payload));
      const chunk = parseUpstreamReply(generateContentResponseSchema, payload);
      const text = candidateText(chunk);
      if (text) parts.push({ type: "text-delta", text });
      for (const call of candidateToolCalls(chunk)) {
        const index = callCount;
        callCount += 1;
        parts.push({ type: "tool-call-start", index, id: call.id, name: call.name });
        parts.push({ type: "tool-call-delta", index, argumentsDelta: call.arguments });
      }
      finishReason = candidateFinishReason(chunk) ?? finishReason;
      if (chunk.usageMetadata) {
        usageMetadata = mergeUsageMetadata(usageMetadata, chunk.usageMetadata);
        usage = convertGenerateContentUsage(usageMetadata);
      }
    },
    usageSoFar: () => usage,
    outcome: () => ({
      usage,
      finishReason: finishReason && withToolCalls(finishReason, callCount > 0),
    }),
  });
}
