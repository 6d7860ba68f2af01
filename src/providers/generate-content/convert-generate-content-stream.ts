import type { ServerSentEvent } from "../http/server-sent-events";
import { reportedFailureError } from "../http/transport-errors";
import { hasErrorMember, messageOf } from "../http/upstream-error-message";
import { parseUpstreamJson, parseUpstreamReply } from "../http/upstream-reply";
import type { FinishReason, GenerationStreamPart, ReportedUsage } from "../provider";
import { convertEventStream } from "../stream-conversion";
import { candidateFinishReason, candidateText } from "./convert-generate-content-response";
import { convertGenerateContentUsage } from "./convert-generate-content-usage";
import { generateContentResponseSchema } from "./generate-content-schemas";

/**
 * `:streamGenerateContent?alt=sse` chunks to stream parts. Every chunk is a whole response holding the next
 * piece of text; usage metadata is repeated with running totals, so the last chunk's values count (C7).
 * An upstream that fails mid-stream sends a chunk with an `error` member.
 */
export function convertGenerateContentStream(
  batches: AsyncIterable<readonly ServerSentEvent[]>,
): AsyncGenerator<GenerationStreamPart[]> {
  let finishReason: FinishReason | undefined;
  let usage: ReportedUsage | null = null;
  return convertEventStream(batches, {
    convert(event, parts) {
      const payload = parseUpstreamJson(event.data);
      if (hasErrorMember(payload)) throw reportedFailureError(messageOf(payload));
      const chunk = parseUpstreamReply(generateContentResponseSchema, payload);
      const text = candidateText(chunk);
      if (text) parts.push({ type: "text-delta", text });
      finishReason = candidateFinishReason(chunk) ?? finishReason;
      if (chunk.usageMetadata) usage = convertGenerateContentUsage(chunk.usageMetadata);
    },
    outcome: () => ({ usage, finishReason }),
  });
}
