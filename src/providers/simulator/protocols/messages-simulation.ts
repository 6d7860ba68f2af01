import {
  namedEventFrame,
  type ReplyContext,
  type SimulatedProtocol,
  type StreamTranscript,
} from "../simulated-protocol";
import type { SimulatedToolCall, SimulatedTurn } from "../simulated-turn";
import { parseMessagesRequest } from "./messages-simulation-request";

/**
 * `message_start` reports a small provisional output count, as upstream does; `message_delta` then carries
 * the cumulative total, which is what a client must keep.
 */
const provisionalOutputTokens = 1;

const stopReasons: Readonly<Record<SimulatedTurn["finish"], string>> = {
  stop: "end_turn",
  length: "max_tokens",
  tool_calls: "tool_use",
};

function usage(completion: SimulatedTurn, outputTokens: number) {
  return {
    input_tokens: completion.promptTokens,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
    output_tokens: outputTokens,
    output_tokens_details: { thinking_tokens: 0 },
    service_tier: "standard",
  };
}

/** Upstream ids are `toolu_` and an opaque suffix; the simulated call's hash is that suffix. */
function toolUseId(call: SimulatedToolCall): string {
  return `toolu_${call.id.slice(call.id.indexOf("_") + 1)}`;
}

/** A tool_use block: whole in a message; in a stream it starts with an empty input that deltas fill. */
function toolUseBlock(call: SimulatedToolCall, input: unknown) {
  return { type: "tool_use", id: toolUseId(call), name: call.name, input, caller: { type: "direct" } };
}

/** A turn that calls tools has only tool_use blocks; any other has one text block. */
function contentOf(completion: SimulatedTurn) {
  if (completion.toolCalls.length > 0)
    return completion.toolCalls.map((call) => toolUseBlock(call, JSON.parse(call.arguments)));
  return [{ type: "text", text: completion.text }];
}

function message(completion: SimulatedTurn, context: ReplyContext, final: boolean) {
  return {
    id: context.id,
    type: "message",
    role: "assistant",
    model: context.model,
    content: final ? contentOf(completion) : [],
    stop_reason: final ? stopReasons[completion.finish] : null,
    stop_sequence: null,
    usage: usage(completion, final ? completion.outputTokens : provisionalOutputTokens),
  };
}

const event = (type: string, fields: object = {}) => namedEventFrame(type, { type, ...fields });

/**
 * Content blocks as upstream streams them: each one's start, its deltas, its stop, one block after the
 * other. A text turn is block 0 with text deltas; a tool turn has one tool_use block per call, each starting
 * with an empty input followed by `input_json_delta`s. Block starts and stops ride with the neighbouring
 * delta frame, so that the transcript still has exactly one frame per delta.
 */
function blockFrames(completion: SimulatedTurn): { opening: string; deltas: string[]; closing: string } {
  if (completion.toolCalls.length === 0)
    return {
      opening:
        event("content_block_start", { index: 0, content_block: { type: "text", text: "" } }) + event("ping"),
      deltas: completion.pieces.map((piece) =>
        event("content_block_delta", { index: 0, delta: { type: "text_delta", text: piece } }),
      ),
      closing: event("content_block_stop", { index: 0 }),
    };
  const deltas: string[] = [];
  let opening = "";
  let pending = "";
  for (const [index, call] of completion.toolCalls.entries()) {
    const start = event("content_block_start", { index, content_block: toolUseBlock(call, {}) });
    if (index === 0) opening = start + event("ping");
    else pending += start;
    for (const piece of call.argumentPieces) {
      const delta = { type: "input_json_delta", partial_json: piece };
      deltas.push(pending + event("content_block_delta", { index, delta }));
      pending = "";
    }
    pending += event("content_block_stop", { index });
  }
  return { opening, deltas, closing: pending };
}

function renderStream(completion: SimulatedTurn, context: ReplyContext): StreamTranscript {
  const blocks = blockFrames(completion);
  return {
    opening: event("message_start", { message: message(completion, context, false) }) + blocks.opening,
    deltas: blocks.deltas,
    closing:
      blocks.closing +
      event("message_delta", {
        delta: { stop_reason: stopReasons[completion.finish], stop_sequence: null },
        usage: { output_tokens: completion.outputTokens, output_tokens_details: { thinking_tokens: 0 } },
      }) +
      event("message_stop"),
    failure: () => event("error", { error: { type: "overloaded_error", message: "Overloaded" } }),
  };
}

const errorTypes: Readonly<Record<number, string>> = {
  400: "invalid_request_error",
  401: "authentication_error",
  403: "permission_error",
  404: "not_found_error",
  413: "request_too_large",
  429: "rate_limit_error",
  529: "overloaded_error",
};

/** POST …/v1/messages. */
export const messagesSimulation: SimulatedProtocol = {
  parseRequest: parseMessagesRequest,

  renderJson(completion, context) {
    return message(completion, context, true);
  },

  renderStream,

  renderError(status, errorMessage) {
    const type = errorTypes[status] ?? (status >= 500 ? "api_error" : "invalid_request_error");
    return { type: "error", error: { type, message: errorMessage } };
  },
};
