import type { ContentPart, GenerationMessage, ImageSource } from "../provider";
import { type ToolCallIdRule, toolCallIdWithin } from "../tool-call-ids";

/**
 * The conversation in the protocol's own turns: a user's text and images as content parts (a text-only turn
 * as a plain string, the form every implementation of the protocol accepts), the assistant's tool calls as
 * `tool_calls`, and each result as a `tool` message naming its call (by an id the protocol takes,
 * tool-call-ids.ts).
 */

export type ChatCompletionsContentPart =
  | { type: "text"; text: string }
  | { type: "image_url"; image_url: { url: string; detail?: "auto" | "low" | "high" } };

export interface ChatCompletionsToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

export type ChatCompletionsMessage =
  | { role: "system"; content: string; name?: string }
  | { role: "user"; content: string | ChatCompletionsContentPart[]; name?: string }
  | { role: "assistant"; content: string | null; tool_calls?: ChatCompletionsToolCall[]; name?: string }
  | { role: "tool"; tool_call_id: string; content: string };

/** The protocol's reference API refuses a call id over 40 characters. */
const chatCompletionsToolCallIds: ToolCallIdRule = { prefix: "call_", charactersMax: 40 };

export function convertToChatCompletionsMessages(
  messages: readonly GenerationMessage[],
): ChatCompletionsMessage[] {
  return messages.map((message): ChatCompletionsMessage => {
    const named = message.role !== "tool" && message.name !== undefined ? { name: message.name } : {};
    switch (message.role) {
      case "system":
        return { role: "system", content: message.content, ...named };
      case "user":
        return { role: "user", content: userContentOf(message.content), ...named };
      case "assistant":
        if (message.toolCalls.length === 0) return { role: "assistant", content: message.content, ...named };
        return {
          ...named,
          role: "assistant",
          // The protocol's own form of a turn that only called tools.
          content: message.content === "" ? null : message.content,
          tool_calls: message.toolCalls.map((call) => ({
            id: toolCallIdWithin(chatCompletionsToolCallIds, call.id),
            type: "function",
            function: { name: call.name, arguments: call.arguments },
          })),
        };
      case "tool":
        return {
          role: "tool",
          tool_call_id: toolCallIdWithin(chatCompletionsToolCallIds, message.toolCallId),
          content: message.content,
        };
      default: {
        const unknownMessage: never = message;
        throw new Error(`unknown message ${JSON.stringify(unknownMessage)}`);
      }
    }
  });
}

function userContentOf(parts: readonly ContentPart[]): string | ChatCompletionsContentPart[] {
  if (parts.every((part) => part.type === "text")) return parts.map((part) => part.text).join("");
  return parts.map((part): ChatCompletionsContentPart => {
    if (part.type === "text") return { type: "text", text: part.text };
    const url = imageUrlOf(part.image);
    return { type: "image_url", image_url: part.detail ? { url, detail: part.detail } : { url } };
  });
}

/** The protocol takes an image as a URL: the client's own, or its bytes as the `data:` URL they came in. */
function imageUrlOf(image: ImageSource): string {
  return image.kind === "url" ? image.url : `data:${image.mediaType};base64,${image.data}`;
}
