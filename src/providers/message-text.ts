import type { ContentPart, GenerationMessage } from "./provider";

/** The text parts of a user message, joined as the protocols concatenate consecutive text. */
export function textOfParts(parts: readonly ContentPart[]): string {
  let text = "";
  for (const part of parts) if (part.type === "text") text += part.text;
  return text;
}

/** A message's text, whatever its role: tool calls and images are not text and are left out. */
export function textOfMessage(message: GenerationMessage): string {
  return message.role === "user" ? textOfParts(message.content) : message.content;
}

/** A text-only message of the given role: how plain-text turns enter the internal form. */
export function textMessage(role: "system" | "user" | "assistant", text: string): GenerationMessage {
  switch (role) {
    case "system":
      return { role, content: text };
    case "user":
      return { role, content: [{ type: "text", text }] };
    case "assistant":
      return { role, content: text, toolCalls: [] };
  }
}
