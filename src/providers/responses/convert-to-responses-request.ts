import { textOfMessage, textTurnsOf } from "../message-text";
import type { GenerationRequest } from "../provider";

export interface ResponsesRequestBody {
  model: string;
  instructions?: string;
  input: { role: "system" | "user" | "assistant"; content: string }[];
  temperature?: number;
  top_p?: number;
  max_output_tokens?: number;
  stream?: true;
  store: false;
}

/**
 * The leading system messages become `instructions` (the protocol's place for them); a system message
 * later in the conversation stays where it is, as a system input item, so its position is not lost.
 * `store: false`: the gateway is stateless (it never sends `previous_response_id`), so there is no reason
 * to let the upstream keep our clients' conversations.
 */
export function convertToResponsesRequest(
  request: GenerationRequest,
  options: { stream: boolean },
): ResponsesRequestBody {
  const firstNonSystemIndex = request.messages.findIndex((message) => message.role !== "system");
  const leadingCount = firstNonSystemIndex === -1 ? request.messages.length : firstNonSystemIndex;
  const instructions = request.messages
    .slice(0, leadingCount)
    .map((message) => textOfMessage(message))
    .join("\n\n");
  return {
    model: request.upstreamModelId,
    ...(leadingCount > 0 && { instructions }),
    input: textTurnsOf(request.messages.slice(leadingCount)),
    ...(request.temperature !== undefined && { temperature: request.temperature }),
    ...(request.topP !== undefined && { top_p: request.topP }),
    ...(request.maxOutputTokens !== undefined && { max_output_tokens: request.maxOutputTokens }),
    ...(options.stream && { stream: true }),
    store: false,
  };
}
