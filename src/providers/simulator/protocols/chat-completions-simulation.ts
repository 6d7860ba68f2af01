import { countTokens } from "gpt-tokenizer";
import type { SimulatedMessage } from "../simulated-completion";
import {
  contentText,
  dataFrame,
  type ReplyContext,
  type SimulatedProtocol,
  type SimulationInput,
  type StreamTranscript,
} from "../simulated-protocol";
import type { SimulatedOutputFormat, SimulatedToolChoice, SimulatedTurn } from "../simulated-turn";
import { chatCompletionsRequestSchema, describeIssue } from "./request-schemas";

type ChatCompletionsRequest = ReturnType<typeof chatCompletionsRequestSchema.parse>;

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

function toolCallsOf(completion: SimulatedTurn) {
  return completion.toolCalls.map((call) => ({
    id: call.id,
    type: "function",
    function: { name: call.name, arguments: call.arguments },
  }));
}

type Chunk = (choices: unknown[], extra?: object) => string;
type Choice = (delta: object, finishReason: string | null) => object;

function renderStream(completion: SimulatedTurn, context: ReplyContext): StreamTranscript {
  const chunk: Chunk = (choices, extra = {}) =>
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
  const choice: Choice = (delta, finishReason) => ({
    index: 0,
    delta,
    logprobs: null,
    finish_reason: finishReason,
  });
  const closing =
    chunk([choice({}, completion.finish)]) +
    (context.includeStreamUsage ? chunk([], { usage: usage(completion) }) : "") +
    "data: [DONE]\n\n";
  if (completion.toolCalls.length > 0)
    return { ...toolCallStream(completion.toolCalls, chunk, choice), closing, failure };
  // A refusal streams as its own field, the content staying null, as upstream streams one.
  if (completion.refused)
    return {
      opening: chunk([choice({ role: "assistant", content: null, refusal: "" }, null)]),
      deltas: completion.pieces.map((piece) => chunk([choice({ refusal: piece }, null)])),
      closing,
      failure,
    };
  return {
    opening: chunk([choice({ role: "assistant", content: "", refusal: null }, null)]),
    deltas: completion.pieces.map((piece) => chunk([choice({ content: piece }, null)])),
    closing,
    failure,
  };
}

/**
 * Tool calls as the upstream streams them: the first chunk carries the role, `content: null` and the first
 * call's index, id, type, name and empty arguments; each call's arguments follow in pieces, by index only;
 * a later call's first chunk goes out just before its first piece.
 */
function toolCallStream(
  toolCalls: SimulatedTurn["toolCalls"],
  chunk: Chunk,
  choice: Choice,
): Pick<StreamTranscript, "opening" | "deltas" | "deltaTokens"> {
  const start = (index: number) => {
    const call = toolCalls[index]!;
    return { index, id: call.id, type: "function", function: { name: call.name, arguments: "" } };
  };
  const deltas: string[] = [];
  const deltaTokens: number[] = [];
  for (const [index, call] of toolCalls.entries()) {
    let pending = index === 0 ? "" : chunk([choice({ tool_calls: [start(index)] }, null)]);
    for (const piece of call.argumentPieces) {
      const argumentsChunk = chunk([
        choice({ tool_calls: [{ index, function: { arguments: piece } }] }, null),
      ]);
      deltas.push(pending + argumentsChunk);
      deltaTokens.push(countTokens(piece));
      pending = "";
    }
    if (pending !== "") {
      deltas.push(pending);
      deltaTokens.push(0);
    }
  }
  return {
    opening: chunk([
      choice({ role: "assistant", content: null, tool_calls: [start(0)], refusal: null }, null),
    ]),
    deltas,
    deltaTokens,
  };
}

function failure(): string {
  return dataFrame({
    error: {
      message: "The server had an error while processing your request.",
      type: "server_error",
      param: null,
      code: null,
    },
  });
}

/** What the simulated model reads of a message: its text, and the calls an assistant turn made. */
function simulatedMessageOf(message: ChatCompletionsRequest["messages"][number]): SimulatedMessage {
  // Image parts have no text: they are counted as images (imageCount), not read.
  const content = message.content;
  const text =
    typeof content === "string" || content == null
      ? contentText(content)
      : contentText(content.map((part) => (part.type === "text" ? part : { text: "" })));
  const calls = (message.tool_calls ?? []).map((call) => `${call.function.name}(${call.function.arguments})`);
  return { role: message.role, text: calls.length > 0 ? `${text}${calls.join("")}` : text };
}

function toolChoiceOf(choice: ChatCompletionsRequest["tool_choice"]): SimulatedToolChoice | undefined {
  if (choice == null) return undefined;
  return typeof choice === "string" ? choice : { name: choice.function.name };
}

function outputFormatOf(
  format: ChatCompletionsRequest["response_format"],
): SimulatedOutputFormat | undefined {
  if (format == null || format.type === "text") return undefined;
  if (format.type === "json_object") return { type: "json_object" };
  return { type: "json_schema", schema: format.json_schema.schema ?? {} };
}

function simulationInputOf(request: ChatCompletionsRequest): SimulationInput {
  const toolChoice = toolChoiceOf(request.tool_choice);
  const outputFormat = outputFormatOf(request.response_format);
  return {
    model: request.model,
    messages: request.messages.map(simulatedMessageOf),
    maxOutputTokens: request.max_completion_tokens ?? request.max_tokens ?? undefined,
    stream: request.stream === true,
    includeStreamUsage: request.stream_options?.include_usage === true,
    tools: (request.tools ?? []).map((tool) => ({
      name: tool.function.name,
      parameters: tool.function.parameters,
    })),
    ...(toolChoice !== undefined && { toolChoice }),
    ...(request.parallel_tool_calls != null && { parallelToolCalls: request.parallel_tool_calls }),
    ...(outputFormat !== undefined && { outputFormat }),
    imageCount: request.messages.reduce(
      (count, message) =>
        count +
        (Array.isArray(message.content)
          ? message.content.filter((part) => part.type === "image_url").length
          : 0),
      0,
    ),
  };
}

/** POST …/chat/completions. */
export const chatCompletionsSimulation: SimulatedProtocol = {
  parseRequest(body) {
    const parsed = chatCompletionsRequestSchema.safeParse(body);
    if (!parsed.success) return { ok: false, message: describeIssue(parsed.error) };
    return { ok: true, input: simulationInputOf(parsed.data) };
  },

  renderJson(completion, context) {
    const toolCalls = toolCallsOf(completion);
    return {
      id: context.id,
      object: "chat.completion",
      created: context.createdUnixSeconds,
      model: context.model,
      choices: [
        {
          index: 0,
          message: {
            role: "assistant",
            // A reply that only calls tools, or refuses, has no text: null, as upstream sends it.
            content:
              completion.refused || (toolCalls.length > 0 && completion.text === "") ? null : completion.text,
            ...(toolCalls.length > 0 && { tool_calls: toolCalls }),
            refusal: completion.refused ? completion.text : null,
            annotations: [],
          },
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
