import type { ServerSentEvent } from "../http/server-sent-events";
import { reportedFailureError } from "../http/transport-errors";
import { messageOf } from "../http/upstream-error-message";
import { parseUpstreamJson, parseUpstreamReply } from "../http/upstream-reply";
import type { FinishReason, GenerationStreamPart } from "../provider";
import { convertEventStream } from "../stream-conversion";
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
export function convertMessagesStream(
  batches: AsyncIterable<readonly ServerSentEvent[]>,
): AsyncGenerator<GenerationStreamPart[]> {
  let usage: MessagesUsage | undefined;
  let stopReason: FinishReason | undefined;
  let stopped = false;
  return convertEventStream(batches, {
    convert(event, parts) {
      // Read on to the end of the body after message_stop rather than stop: the socket stays reusable.
      if (stopped) return;
      const payload = parseUpstreamJson(event.data);
      const { type } = parseUpstreamReply(messagesStreamEventSchema, payload);
      switch (type) {
        case "message_start": {
          const startUsage = parseUpstreamReply(messageStartEventSchema, payload).message.usage;
          if (startUsage) usage = mergeMessagesUsage(usage, startUsage);
          return;
        }
        case "content_block_delta": {
          const { delta } = parseUpstreamReply(contentBlockDeltaEventSchema, payload);
          if (delta.type === "text_delta" && delta.text) parts.push({ type: "text-delta", text: delta.text });
          return;
        }
        case "message_delta": {
          const messageDelta = parseUpstreamReply(messageDeltaEventSchema, payload);
          if (messageDelta.delta.stop_reason)
            stopReason = mapMessagesFinishReason(messageDelta.delta.stop_reason);
          if (messageDelta.usage) usage = mergeMessagesUsage(usage, messageDelta.usage);
          return;
        }
        case "message_stop":
          stopped = true;
          return;
        case "error":
          throw reportedFailureError(messageOf(payload));
        default:
          return;
      }
    },
    outcome: () => ({
      usage: usage ? convertMessagesUsage(usage) : null,
      // A message_stop without a stop reason still ended the message; without either the stream was cut.
      finishReason: stopReason ?? (stopped ? "other" : undefined),
    }),
  });
}
