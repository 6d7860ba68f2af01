import type { ServerSentEvent } from "../http/server-sent-events";
import { reportedFailureError } from "../http/transport-errors";
import { messageOf } from "../http/upstream-error-message";
import { parseUpstreamJson, parseUpstreamReply } from "../http/upstream-reply";
import type { FinishReason, GenerationStreamPart } from "../provider";
import { closingParts } from "../stream-closing";
import { convertMessagesUsage, mergeMessagesUsage } from "./convert-messages-usage";
import { mapMessagesFinishReason } from "./map-messages-finish-reason";
import {
  contentBlockDeltaEventSchema,
  type MessagesUsage,
  messageDeltaEventSchema,
  messageStartEventSchema,
  messagesStreamEventSchema,
} from "./messages-schemas";

/**
 * Messages stream events to stream parts: usage from `message_start`, text from `content_block_delta`
 * (text_delta), stop reason and cumulative usage from `message_delta`, the end at `message_stop`; `error`
 * is a failure. `ping` and the block start/stop events carry nothing the gateway needs.
 */
export async function* convertMessagesStream(
  events: AsyncIterable<ServerSentEvent>,
): AsyncGenerator<GenerationStreamPart> {
  let usage: MessagesUsage | undefined;
  let stopReason: FinishReason | undefined;
  let stopped = false;
  for await (const event of events) {
    // Read on to the end of the body after message_stop rather than break: the socket stays reusable.
    if (stopped) continue;
    const payload = parseUpstreamJson(event.data);
    const { type } = parseUpstreamReply(messagesStreamEventSchema, payload);
    switch (type) {
      case "message_start": {
        const startUsage = parseUpstreamReply(messageStartEventSchema, payload).message.usage;
        if (startUsage) usage = mergeMessagesUsage(usage, startUsage);
        break;
      }
      case "content_block_delta": {
        const { delta } = parseUpstreamReply(contentBlockDeltaEventSchema, payload);
        if (delta.type === "text_delta" && delta.text) yield { type: "text-delta", text: delta.text };
        break;
      }
      case "message_delta": {
        const messageDelta = parseUpstreamReply(messageDeltaEventSchema, payload);
        if (messageDelta.delta.stop_reason)
          stopReason = mapMessagesFinishReason(messageDelta.delta.stop_reason);
        if (messageDelta.usage) usage = mergeMessagesUsage(usage, messageDelta.usage);
        break;
      }
      case "message_stop":
        stopped = true;
        break;
      case "error":
        throw reportedFailureError(messageOf(payload));
      default:
        break;
    }
  }
  // A message_stop without a stop reason still ended the message; without either the stream was cut.
  const finishReason = stopReason ?? (stopped ? "other" : undefined);
  yield* closingParts(usage ? convertMessagesUsage(usage) : null, finishReason);
}
