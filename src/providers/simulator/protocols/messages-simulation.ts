import type { SimulatedMessage } from "../simulated-completion";
import {
  contentText,
  namedEventFrame,
  type ReplyContext,
  type SimulatedProtocol,
  type StreamTranscript,
} from "../simulated-protocol";
import type { SimulatedTurn } from "../simulated-turn";
import { describeIssue, messagesRequestSchema } from "./request-schemas";

/**
 * `message_start` reports a small provisional output count, as upstream does; `message_delta` then carries
 * the cumulative total, which is what a client must keep.
 */
const provisionalOutputTokens = 1;

function stopReason(completion: SimulatedTurn): string {
  return completion.finish === "length" ? "max_tokens" : "end_turn";
}

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

function message(completion: SimulatedTurn, context: ReplyContext, final: boolean) {
  return {
    id: context.id,
    type: "message",
    role: "assistant",
    model: context.model,
    content: final ? [{ type: "text", text: completion.text }] : [],
    stop_reason: final ? stopReason(completion) : null,
    stop_sequence: null,
    usage: usage(completion, final ? completion.outputTokens : provisionalOutputTokens),
  };
}

function renderStream(completion: SimulatedTurn, context: ReplyContext): StreamTranscript {
  const event = (type: string, fields: object = {}) => namedEventFrame(type, { type, ...fields });
  return {
    opening:
      event("message_start", { message: message(completion, context, false) }) +
      event("content_block_start", { index: 0, content_block: { type: "text", text: "" } }) +
      event("ping"),
    deltas: completion.pieces.map((piece) =>
      event("content_block_delta", { index: 0, delta: { type: "text_delta", text: piece } }),
    ),
    closing:
      event("content_block_stop", { index: 0 }) +
      event("message_delta", {
        delta: { stop_reason: stopReason(completion), stop_sequence: null },
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
  parseRequest(body) {
    const parsed = messagesRequestSchema.safeParse(body);
    if (!parsed.success) return { ok: false, message: describeIssue(parsed.error) };
    const request = parsed.data;
    const system: SimulatedMessage[] = request.system
      ? [{ role: "system", text: contentText(request.system) }]
      : [];
    return {
      ok: true,
      input: {
        model: request.model,
        messages: [
          ...system,
          ...request.messages.map((entry) => ({ role: entry.role, text: contentText(entry.content) })),
        ],
        maxOutputTokens: request.max_tokens,
        stream: request.stream === true,
        includeStreamUsage: true,
      },
    };
  },

  renderJson(completion, context) {
    return message(completion, context, true);
  },

  renderStream,

  renderError(status, errorMessage) {
    const type = errorTypes[status] ?? (status >= 500 ? "api_error" : "invalid_request_error");
    return { type: "error", error: { type, message: errorMessage } };
  },
};
