import type { GenerationRequest } from "../provider";
import {
  type ChatCompletionsMessage,
  convertToChatCompletionsMessages,
} from "./convert-to-chat-completions-messages";
import {
  type ChatCompletionsResponseFormat,
  type ChatCompletionsTool,
  type ChatCompletionsToolChoice,
  convertToChatCompletionsResponseFormat,
  convertToChatCompletionsToolChoice,
  convertToChatCompletionsTools,
} from "./convert-to-chat-completions-tools";

/**
 * Which field carries the output limit. `max_completion_tokens` is the current field of the protocol's
 * reference and the only one its reasoning models accept (`max_tokens` is deprecated and rejected there);
 * some third-party upstreams of the same protocol still know only `max_tokens`, hence the option.
 */
export type ChatCompletionsMaxTokensField = "max_completion_tokens" | "max_tokens";
export const chatCompletionsMaxTokensFieldDefault: ChatCompletionsMaxTokensField = "max_completion_tokens";

export interface ChatCompletionsRequestBody {
  model: string;
  messages: ChatCompletionsMessage[];
  temperature?: number;
  top_p?: number;
  max_completion_tokens?: number;
  max_tokens?: number;
  stop?: string[];
  seed?: number;
  presence_penalty?: number;
  frequency_penalty?: number;
  reasoning_effort?: string;
  user?: string;
  tools?: ChatCompletionsTool[];
  tool_choice?: ChatCompletionsToolChoice;
  parallel_tool_calls?: boolean;
  response_format?: ChatCompletionsResponseFormat;
  stream?: true;
  stream_options?: { include_usage: true };
}

/**
 * The protocol is the gateway's own vocabulary, so every parameter goes out under its own name. Absent
 * request fields stay absent: the upstream's own defaults apply, as the client expects.
 */
export function convertToChatCompletionsRequest(
  request: GenerationRequest,
  options: { stream: boolean; maxTokensField: ChatCompletionsMaxTokensField },
): ChatCompletionsRequestBody {
  return {
    model: request.upstreamModelId,
    messages: convertToChatCompletionsMessages(request.messages),
    ...(request.temperature !== undefined && { temperature: request.temperature }),
    ...(request.topP !== undefined && { top_p: request.topP }),
    ...(request.maxOutputTokens !== undefined && { [options.maxTokensField]: request.maxOutputTokens }),
    ...(request.stop !== undefined && { stop: request.stop }),
    ...(request.seed !== undefined && { seed: request.seed }),
    ...(request.presencePenalty !== undefined && { presence_penalty: request.presencePenalty }),
    ...(request.frequencyPenalty !== undefined && { frequency_penalty: request.frequencyPenalty }),
    ...(request.reasoningEffort !== undefined && { reasoning_effort: request.reasoningEffort }),
    ...(request.user !== undefined && { user: request.user }),
    ...(request.tools !== undefined && { tools: convertToChatCompletionsTools(request.tools) }),
    ...(request.toolChoice !== undefined && {
      tool_choice: convertToChatCompletionsToolChoice(request.toolChoice),
    }),
    ...(request.parallelToolCalls !== undefined && { parallel_tool_calls: request.parallelToolCalls }),
    ...(request.outputFormat !== undefined && {
      response_format: convertToChatCompletionsResponseFormat(request.outputFormat),
    }),
    // Usage is what we bill, so a stream always asks for it, whatever the client asked (C5).
    ...(options.stream && { stream: true, stream_options: { include_usage: true } }),
  };
}
