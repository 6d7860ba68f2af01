import { textTurnsOf } from "../message-text";
import type { GenerationRequest } from "../provider";

/**
 * The messages protocol requires `max_tokens`; a client of the other formats may leave it out, meaning
 * "as much as the model gives". 32,000 is the largest output limit that every current model of the
 * protocol accepts (its 4-generation models allow 32,000 to 64,000), so the default neither truncates
 * long answers early nor gets the request rejected.
 */
export const messagesMaxTokensDefault = 32_000;

export interface MessagesRequestBody {
  model: string;
  max_tokens: number;
  system?: string;
  messages: { role: "user" | "assistant"; content: string }[];
  temperature?: number;
  top_p?: number;
  stream?: true;
}

/**
 * System messages move to the top-level `system` field (the protocol has no system role in `messages`),
 * joined in order; the other messages keep their order.
 */
export function convertToMessagesRequest(
  request: GenerationRequest,
  options: { stream: boolean },
): MessagesRequestBody {
  const systemTexts: string[] = [];
  const messages: MessagesRequestBody["messages"] = [];
  for (const message of textTurnsOf(request.messages)) {
    if (message.role === "system") systemTexts.push(message.content);
    else messages.push({ role: message.role, content: message.content });
  }
  return {
    model: request.upstreamModelId,
    max_tokens: request.maxOutputTokens ?? messagesMaxTokensDefault,
    ...(systemTexts.length > 0 && { system: systemTexts.join("\n\n") }),
    messages,
    ...(request.temperature !== undefined && { temperature: request.temperature }),
    ...(request.topP !== undefined && { top_p: request.topP }),
    ...(options.stream && { stream: true }),
  };
}
