import type { ServerSentEvent } from "../http/server-sent-events";
import { reportedFailureError } from "../http/transport-errors";
import { parseUpstreamJson, parseUpstreamReply } from "../http/upstream-reply";
import type { GenerationStreamPart } from "../provider";
import { convertEventStream } from "../stream-conversion";
import { convertResponsesUsage } from "./convert-responses-usage";
import { mapResponsesFinishReason } from "./map-responses-finish-reason";
import {
  outputTextDeltaEventSchema,
  type ResponseOutcome,
  responsesErrorEventSchema,
  responsesStreamEventSchema,
  responseTerminalEventSchema,
} from "./responses-schemas";

/**
 * Responses stream events to stream parts: text from `response.output_text.delta`, usage and finish from
 * the terminal `response.completed` / `response.incomplete`; `response.failed` and `error` are failures.
 * The many lifecycle events (created, output_item.added, …) carry nothing the gateway needs.
 */
export function convertResponsesStream(
  batches: AsyncIterable<readonly ServerSentEvent[]>,
): AsyncGenerator<GenerationStreamPart[]> {
  let outcome: ResponseOutcome | undefined;
  return convertEventStream(batches, {
    convert(event, parts) {
      // Read on to the end of the body after the terminal event rather than stop: the socket stays reusable.
      if (outcome !== undefined || event.data === "[DONE]") return;
      const payload = parseUpstreamJson(event.data);
      const { type } = parseUpstreamReply(responsesStreamEventSchema, payload);
      switch (type) {
        case "response.output_text.delta": {
          const { delta } = parseUpstreamReply(outputTextDeltaEventSchema, payload);
          if (delta) parts.push({ type: "text-delta", text: delta });
          return;
        }
        case "response.completed":
        case "response.incomplete":
          outcome = parseUpstreamReply(responseTerminalEventSchema, payload).response;
          return;
        case "response.failed": {
          // A failure must surface as one even when its body is not as documented.
          const failed = responseTerminalEventSchema.safeParse(payload);
          throw reportedFailureError(failed.success ? failed.data.response.error?.message : undefined);
        }
        case "error": {
          const error = responsesErrorEventSchema.safeParse(payload);
          throw reportedFailureError(error.success ? error.data.message : undefined);
        }
        default:
          return;
      }
    },
    outcome: () => ({
      usage: outcome?.usage ? convertResponsesUsage(outcome.usage) : null,
      finishReason: outcome ? mapResponsesFinishReason(outcome) : undefined,
    }),
  });
}
