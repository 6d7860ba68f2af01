import type { ServerSentEvent } from "../http/server-sent-events";
import { reportedFailureError } from "../http/transport-errors";
import { messageOf } from "../http/upstream-error-message";
import { parseUpstreamJson, parseUpstreamReply } from "../http/upstream-reply";
import type { GenerationStreamPart } from "../provider";
import { convertEventStream } from "../stream-conversion";
import { type MessagesReplyOptions, plainReply } from "./convert-messages-response";
import { convertMessagesUsage, mergeMessagesUsage } from "./convert-messages-usage";
import { mapMessagesFinishReason } from "./map-messages-finish-reason";
import {
  contentBlockDeltaEventSchema,
  contentBlockStartEventSchema,
  contentBlockStopEventSchema,
  type MessagesUsage,
  messageDeltaEventSchema,
  messageStartEventSchema,
  messagesStreamEventSchema,
  toolUseStartEventSchema,
} from "./messages-schemas";

/** What a started content block turns into: a client tool call (by its ordinal), or the answer's text. */
type OpenBlock =
  | { kind: "call"; callIndex: number; argumentsSent: boolean }
  | { kind: "answer"; textSent: boolean };

/**
 * Messages stream events to stream parts: usage from `message_start`; text from `text_delta`; a `tool_use`
 * block's start is a tool-call start (indexed by its ordinal among the reply's calls, not by content
 * block), its `input_json_delta`s are argument deltas; stop reason and cumulative usage from
 * `message_delta`; the end at `message_stop`; `error` is a failure. The answer tool of json_object output
 * streams as text. `ping` and thinking blocks carry nothing the gateway needs.
 */
export function convertMessagesStream(
  batches: AsyncIterable<readonly ServerSentEvent[]>,
  options: MessagesReplyOptions = plainReply,
): AsyncGenerator<GenerationStreamPart[]> {
  let usage: MessagesUsage | undefined;
  let stopReason: string | undefined;
  let stopped = false;
  let callCount = 0;
  const openBlocks = new Map<number, OpenBlock>();
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
        case "content_block_start": {
          const { index, content_block: started } = parseUpstreamReply(contentBlockStartEventSchema, payload);
          if (started.type !== "tool_use") return;
          const block = parseUpstreamReply(toolUseStartEventSchema, payload).content_block;
          if (block.name === options.answerToolName) {
            openBlocks.set(index, { kind: "answer", textSent: false });
            return;
          }
          openBlocks.set(index, { kind: "call", callIndex: callCount, argumentsSent: false });
          parts.push({ type: "tool-call-start", index: callCount, id: block.id, name: block.name });
          callCount += 1;
          return;
        }
        case "content_block_delta": {
          const { index, delta } = parseUpstreamReply(contentBlockDeltaEventSchema, payload);
          if (delta.type === "text_delta" && delta.text) parts.push({ type: "text-delta", text: delta.text });
          if (delta.type !== "input_json_delta" || !delta.partial_json) return;
          const block = openBlocks.get(index);
          if (block?.kind === "call") {
            parts.push({
              type: "tool-call-delta",
              index: block.callIndex,
              argumentsDelta: delta.partial_json,
            });
            block.argumentsSent = true;
          } else if (block?.kind === "answer") {
            parts.push({ type: "text-delta", text: delta.partial_json });
            block.textSent = true;
          }
          return;
        }
        case "content_block_stop": {
          const { index } = parseUpstreamReply(contentBlockStopEventSchema, payload);
          const block = openBlocks.get(index);
          openBlocks.delete(index);
          // A call without arguments streams no JSON at all; its arguments are still the object {}.
          if (block?.kind === "call" && !block.argumentsSent)
            parts.push({ type: "tool-call-delta", index: block.callIndex, argumentsDelta: "{}" });
          if (block?.kind === "answer" && !block.textSent) parts.push({ type: "text-delta", text: "{}" });
          return;
        }
        case "message_delta": {
          const messageDelta = parseUpstreamReply(messageDeltaEventSchema, payload);
          if (messageDelta.delta.stop_reason) stopReason = messageDelta.delta.stop_reason;
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
      finishReason:
        stopReason !== undefined
          ? mapMessagesFinishReason(stopReason, callCount)
          : stopped
            ? "other"
            : undefined,
    }),
  });
}
