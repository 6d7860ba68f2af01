import { textTurnsOf } from "../message-text";
import type { GenerationRequest } from "../provider";

/**
 * Which field carries the output limit. `max_completion_tokens` is the current field of the protocol's
 * reference and the only one its reasoning models accept (`max_tokens` is deprecated and rejected there);
 * some third-party upstreams of the same protocol still know only `max_tokens`, hence the option.
 */
export type ChatCompletionsMaxTokensField = "max_completion_tokens" | "max_tokens";
export const chatCompletionsMaxTokensFieldDefault: ChatCompletionsMaxTokensField = "max_completion_tokens";

export interface ChatCompletionsRequestBody {
  model: string;
  messages: { role: "system" | "user" | "assistant"; content: string }[];
  temperature?: number;
  top_p?: number;
  max_completion_tokens?: number;
  max_tokens?: number;
  stream?: true;
  stream_options?: { include_usage: true };
}

/** Absent request fields stay absent: the upstream's own defaults apply, as the client expects. */
export function convertToChatCompletionsRequest(
  request: GenerationRequest,
  options: { stream: boolean; maxTokensField: ChatCompletionsMaxTokensField },
): ChatCompletionsRequestBody {
  return {
    model: request.upstreamModelId,
    messages: textTurnsOf(request.messages),
    ...(request.temperature !== undefined && { temperature: request.temperature }),
    ...(request.topP !== undefined && { top_p: request.topP }),
    ...(request.maxOutputTokens !== undefined && { [options.maxTokensField]: request.maxOutputTokens }),
    // Usage is what we bill, so a stream always asks for it, whatever the client asked (C5).
    ...(options.stream && { stream: true, stream_options: { include_usage: true } }),
  };
}
