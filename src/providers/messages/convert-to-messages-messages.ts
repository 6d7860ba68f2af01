import type { ContentPart, GenerationMessage, ToolCall } from "../provider";
import { UnsupportedRequestError } from "../provider";
import { quotedToolCallId, type ToolCallIdRule, toolCallIdWithin } from "../tool-call-ids";

export type MessagesImageSource =
  | { type: "base64"; media_type: string; data: string }
  | { type: "url"; url: string };

export type MessagesContentBlock =
  | { type: "text"; text: string }
  | { type: "image"; source: MessagesImageSource }
  | { type: "tool_use"; id: string; name: string; input: Record<string, unknown> }
  | { type: "tool_result"; tool_use_id: string; content: string };

export interface MessagesTurn {
  role: "user" | "assistant";
  /** A string when the turn is one text; blocks otherwise. */
  content: string | MessagesContentBlock[];
}

/** The protocol refuses a call id of any character but letters, digits, `_` and `-`. */
const messagesToolCallIds: ToolCallIdRule = { prefix: "toolu_", pattern: /^[a-zA-Z0-9_-]+$/ };

/**
 * The conversation in the protocol's shape: system texts move to the top-level `system` (the protocol has
 * no system role), joined in order. Tool results are `tool_result` blocks of a user turn, and the protocol
 * requires user and assistant to alternate, so consecutive results share one user turn and a user message
 * right after them joins that turn (after the results: the protocol wants results first).
 */
export function convertToMessagesTurns(messages: readonly GenerationMessage[]): {
  system: string | undefined;
  turns: MessagesTurn[];
} {
  const systemTexts: string[] = [];
  const turns: MessagesTurn[] = [];
  let openResultTurn: MessagesContentBlock[] | undefined;
  for (const message of messages) {
    switch (message.role) {
      case "system":
        systemTexts.push(message.content);
        continue;
      case "tool": {
        const block: MessagesContentBlock = {
          type: "tool_result",
          tool_use_id: toolCallIdWithin(messagesToolCallIds, message.toolCallId),
          content: message.content,
        };
        if (openResultTurn) openResultTurn.push(block);
        else {
          openResultTurn = [block];
          turns.push({ role: "user", content: openResultTurn });
        }
        continue;
      }
      case "user":
        if (openResultTurn) openResultTurn.push(...message.content.map(contentBlockOf));
        else turns.push({ role: "user", content: userContentOf(message.content) });
        openResultTurn = undefined;
        continue;
      case "assistant":
        turns.push({ role: "assistant", content: assistantContentOf(message.content, message.toolCalls) });
        openResultTurn = undefined;
        continue;
      default: {
        const unknownMessage: never = message;
        throw new Error(`unknown message role: ${JSON.stringify(unknownMessage)}`);
      }
    }
  }
  return { system: systemTexts.length > 0 ? systemTexts.join("\n\n") : undefined, turns };
}

/** Text-only turns stay strings, the protocol's shorthand for one text block. */
function userContentOf(parts: readonly ContentPart[]): MessagesTurn["content"] {
  if (parts.every((part) => part.type === "text")) return parts.map((part) => part.text).join("");
  return parts.map(contentBlockOf);
}

/** The protocol has no image detail hint: `detail` is left out. */
function contentBlockOf(part: ContentPart): MessagesContentBlock {
  if (part.type === "text") return { type: "text", text: part.text };
  const source: MessagesImageSource =
    part.image.kind === "url"
      ? { type: "url", url: part.image.url }
      : { type: "base64", media_type: part.image.mediaType, data: part.image.data };
  return { type: "image", source };
}

function assistantContentOf(text: string, toolCalls: readonly ToolCall[]): MessagesTurn["content"] {
  if (toolCalls.length === 0) return text;
  // The protocol refuses empty text blocks, so a turn that only called tools has tool_use blocks only.
  const textBlocks: MessagesContentBlock[] = text === "" ? [] : [{ type: "text", text }];
  return [
    ...textBlocks,
    ...toolCalls.map(
      (call): MessagesContentBlock => ({
        type: "tool_use",
        id: toolCallIdWithin(messagesToolCallIds, call.id),
        name: call.name,
        input: toolInputOf(call),
      }),
    ),
  ];
}

/**
 * `tool_use.input` is the arguments object itself, not JSON text. Arguments that are empty mean a call
 * without arguments ({}); arguments that are not a JSON object cannot be carried, so they are refused here,
 * before any upstream call, as the generateContent protocol's are: the client's value (400/100), not an
 * upstream's answer.
 */
function toolInputOf(call: ToolCall): Record<string, unknown> {
  if (call.arguments.trim() === "") return {};
  let input: unknown;
  try {
    input = JSON.parse(call.arguments);
  } catch {
    input = undefined;
  }
  if (typeof input !== "object" || input === null || Array.isArray(input))
    throw new UnsupportedRequestError(
      `arguments of tool call ${quotedToolCallId(call.id)}: not a JSON object`,
    );
  return input as Record<string, unknown>;
}
