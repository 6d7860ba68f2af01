import type { ServerSentEvent } from "../http/server-sent-events";
import { reportedFailureError } from "../http/transport-errors";
import { messageOf } from "../http/upstream-error-message";
import { parseUpstreamJson, parseUpstreamReply } from "../http/upstream-reply";
import type { GenerationStreamPart, ReportedUsage } from "../provider";
import { convertEventStream } from "../stream-conversion";
import { type MessagesReplyOptions, plainReply } from "./convert-messages-response";
import { convertMessagesUsage, mergeMessagesUsage } from "./convert-messages-usage";
import { mapMessagesErrorStatus } from "./map-messages-error-status";
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

/** What the stream has told so far, carried from one event to the next. */
interface MessagesStreamState {
  /** The running totals reported so far (`message_start`, then each `message_delta`), as reported. */
  usage: MessagesUsage | undefined;
  /** The same, converted: checked billable as each report arrives, so a bad one fails where it is. */
  reported: ReportedUsage | null;
  stopReason: string | undefined;
  /** message_stop arrived: the message ended, whatever follows is ignored. */
  stopped: boolean;
  /** Client tool calls started so far: the next call's ordinal. */
  callCount: number;
  /** By content block index. */
  openBlocks: Map<number, OpenBlock>;
}

/**
 * Messages stream events to stream parts: usage from `message_start` (its input counts lead the first
 * output, for a stream cut before its end); text from `text_delta`; a `tool_use` block's start is a
 * tool-call start (indexed by its ordinal among the reply's calls, not by content block), its
 * `input_json_delta`s are argument deltas; stop reason and cumulative usage from `message_delta`; the end
 * at `message_stop`; `error` is a failure. The answer tool of json_object output streams as text. `ping`
 * and thinking blocks carry nothing the gateway needs.
 */
export function convertMessagesStream(
  batches: AsyncIterable<readonly ServerSentEvent[]>,
  options: MessagesReplyOptions = plainReply,
): AsyncGenerator<GenerationStreamPart[]> {
  const state: MessagesStreamState = {
    usage: undefined,
    reported: null,
    stopReason: undefined,
    stopped: false,
    callCount: 0,
    openBlocks: new Map(),
  };
  return convertEventStream(batches, {
    convert(event, parts) {
      // Read on to the end of the body after message_stop rather than stop: the socket stays reusable.
      if (state.stopped) return;
      convertMessagesEvent(state, parseUpstreamJson(event.data), parts, options);
    },
    usageSoFar: () => state.reported,
    outcome: () => ({
      usage: state.reported,
      // A message_stop without a stop reason still ended the message; without either the stream was cut.
      finishReason:
        state.stopReason !== undefined
          ? mapMessagesFinishReason(state.stopReason, state.callCount)
          : state.stopped
            ? "other"
            : undefined,
    }),
  });
}

function convertMessagesEvent(
  state: MessagesStreamState,
  payload: unknown,
  parts: GenerationStreamPart[],
  options: MessagesReplyOptions,
): void {
  const { type } = parseUpstreamReply(messagesStreamEventSchema, payload);
  switch (type) {
    case "message_start": {
      const startUsage = parseUpstreamReply(messageStartEventSchema, payload).message.usage;
      if (startUsage) reportUsage(state, startUsage);
      return;
    }
    case "content_block_start":
      startBlock(state, payload, parts, options);
      return;
    case "content_block_delta":
      continueBlock(state, payload, parts);
      return;
    case "content_block_stop":
      stopBlock(state, payload, parts);
      return;
    case "message_delta": {
      const messageDelta = parseUpstreamReply(messageDeltaEventSchema, payload);
      if (messageDelta.delta.stop_reason) state.stopReason = messageDelta.delta.stop_reason;
      if (messageDelta.usage) reportUsage(state, messageDelta.usage);
      return;
    }
    case "message_stop":
      state.stopped = true;
      return;
    case "error":
      throw reportedFailureError(messageOf(payload), mapMessagesErrorStatus(payload));
    default:
      return;
  }
}

function reportUsage(state: MessagesStreamState, usage: MessagesUsage): void {
  state.usage = mergeMessagesUsage(state.usage, usage);
  state.reported = convertMessagesUsage(state.usage);
}

/** A `tool_use` block opens a client call (a tool-call start) or, for the answer tool, the answer's text. */
function startBlock(
  state: MessagesStreamState,
  payload: unknown,
  parts: GenerationStreamPart[],
  options: MessagesReplyOptions,
): void {
  const { index, content_block: started } = parseUpstreamReply(contentBlockStartEventSchema, payload);
  if (started.type !== "tool_use") return;
  const block = parseUpstreamReply(toolUseStartEventSchema, payload).content_block;
  if (block.name === options.answerToolName) {
    state.openBlocks.set(index, { kind: "answer", textSent: false });
    return;
  }
  state.openBlocks.set(index, { kind: "call", callIndex: state.callCount, argumentsSent: false });
  parts.push({ type: "tool-call-start", index: state.callCount, id: block.id, name: block.name });
  state.callCount += 1;
}

/** Text deltas are text; JSON deltas are a call's arguments or, in the answer tool, the answer's text. */
function continueBlock(state: MessagesStreamState, payload: unknown, parts: GenerationStreamPart[]): void {
  const { index, delta } = parseUpstreamReply(contentBlockDeltaEventSchema, payload);
  if (delta.type === "text_delta" && delta.text) parts.push({ type: "text-delta", text: delta.text });
  if (delta.type !== "input_json_delta" || !delta.partial_json) return;
  const block = state.openBlocks.get(index);
  if (block?.kind === "call") {
    parts.push({ type: "tool-call-delta", index: block.callIndex, argumentsDelta: delta.partial_json });
    block.argumentsSent = true;
  } else if (block?.kind === "answer") {
    parts.push({ type: "text-delta", text: delta.partial_json });
    block.textSent = true;
  }
}

function stopBlock(state: MessagesStreamState, payload: unknown, parts: GenerationStreamPart[]): void {
  const { index } = parseUpstreamReply(contentBlockStopEventSchema, payload);
  const block = state.openBlocks.get(index);
  state.openBlocks.delete(index);
  // A call without arguments streams no JSON at all; its arguments are still the object {}.
  if (block?.kind === "call" && !block.argumentsSent)
    parts.push({ type: "tool-call-delta", index: block.callIndex, argumentsDelta: "{}" });
  if (block?.kind === "answer" && !block.textSent) parts.push({ type: "text-delta", text: "{}" });
}
