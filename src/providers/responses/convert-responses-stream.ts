import type { ServerSentEvent } from "../http/server-sent-events";
import { reportedFailureError } from "../http/transport-errors";
import { parseUpstreamJson, parseUpstreamReply } from "../http/upstream-reply";
import type { GenerationStreamPart } from "../provider";
import { closingParts } from "../stream-closing";
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
export async function* convertResponsesStream(
  events: AsyncIterable<ServerSentEvent>,
): AsyncGenerator<GenerationStreamPart> {
  let outcome: ResponseOutcome | undefined;
  for await (const event of events) {
    // Read on to the end of the body after the terminal event rather than break: the socket stays reusable.
    if (outcome !== undefined || event.data === "[DONE]") continue;
    const payload = parseUpstreamJson(event.data);
    const { type } = parseUpstreamReply(responsesStreamEventSchema, payload);
    switch (type) {
      case "response.output_text.delta": {
        const { delta } = parseUpstreamReply(outputTextDeltaEventSchema, payload);
        if (delta) yield { type: "text-delta", text: delta };
        break;
      }
      case "response.completed":
      case "response.incomplete":
        outcome = parseUpstreamReply(responseTerminalEventSchema, payload).response;
        break;
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
        break;
    }
  }
  const usage = outcome?.usage ? convertResponsesUsage(outcome.usage) : null;
  yield* closingParts(usage, outcome ? mapResponsesFinishReason(outcome) : undefined);
}
