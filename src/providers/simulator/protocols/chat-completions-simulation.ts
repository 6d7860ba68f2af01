import {
  contentText,
  dataFrame,
  type ReplyContext,
  type SimulatedProtocol,
  type StreamTranscript,
} from "../simulated-protocol";
import type { SimulatedTurn } from "../simulated-turn";
import { chatCompletionsRequestSchema, describeIssue } from "./request-schemas";

function usage(completion: SimulatedTurn) {
  return {
    prompt_tokens: completion.promptTokens,
    completion_tokens: completion.outputTokens,
    total_tokens: completion.promptTokens + completion.outputTokens,
    prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
    completion_tokens_details: {
      reasoning_tokens: 0,
      audio_tokens: 0,
      accepted_prediction_tokens: 0,
      rejected_prediction_tokens: 0,
    },
  };
}

function renderStream(completion: SimulatedTurn, context: ReplyContext): StreamTranscript {
  const chunk = (choices: unknown[], extra: object = {}) =>
    dataFrame({
      id: context.id,
      object: "chat.completion.chunk",
      created: context.createdUnixSeconds,
      model: context.model,
      system_fingerprint: null,
      choices,
      // With include_usage every chunk carries `usage: null` except the last, as upstream does.
      ...(context.includeStreamUsage && { usage: null }),
      ...extra,
    });
  const choice = (delta: object, finishReason: string | null) => ({
    index: 0,
    delta,
    logprobs: null,
    finish_reason: finishReason,
  });
  return {
    opening: chunk([choice({ role: "assistant", content: "", refusal: null }, null)]),
    deltas: completion.pieces.map((piece) => chunk([choice({ content: piece }, null)])),
    closing:
      chunk([choice({}, completion.finish)]) +
      (context.includeStreamUsage ? chunk([], { usage: usage(completion) }) : "") +
      "data: [DONE]\n\n",
    failure: () =>
      dataFrame({
        error: {
          message: "The server had an error while processing your request.",
          type: "server_error",
          param: null,
          code: null,
        },
      }),
  };
}

/** POST …/chat/completions. */
export const chatCompletionsSimulation: SimulatedProtocol = {
  parseRequest(body) {
    const parsed = chatCompletionsRequestSchema.safeParse(body);
    if (!parsed.success) return { ok: false, message: describeIssue(parsed.error) };
    const request = parsed.data;
    return {
      ok: true,
      input: {
        model: request.model,
        messages: request.messages.map((message) => ({
          role: message.role,
          text: contentText(message.content),
        })),
        maxOutputTokens: request.max_completion_tokens ?? request.max_tokens ?? undefined,
        stream: request.stream === true,
        includeStreamUsage: request.stream_options?.include_usage === true,
      },
    };
  },

  renderJson(completion, context) {
    return {
      id: context.id,
      object: "chat.completion",
      created: context.createdUnixSeconds,
      model: context.model,
      choices: [
        {
          index: 0,
          message: { role: "assistant", content: completion.text, refusal: null, annotations: [] },
          logprobs: null,
          finish_reason: completion.finish,
        },
      ],
      usage: usage(completion),
      service_tier: "default",
      system_fingerprint: null,
    };
  },

  renderStream,

  renderError(status, message) {
    return {
      error: {
        message,
        type: status >= 500 ? "server_error" : "invalid_request_error",
        param: null,
        code: null,
      },
    };
  },
};
