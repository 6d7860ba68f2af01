import type { z } from "zod";
import type { SimulatedMessage } from "../simulated-completion";
import type { ParsedSimulatorRequest } from "../simulated-protocol";
import type { SimulatedToolChoice } from "../simulated-turn";
import { thinkingToolLoopError } from "./messages-thinking-tool-loop";
import { describeIssue, type MessagesContentBlock, messagesRequestSchema } from "./request-schemas";

type MessagesRequest = z.output<typeof messagesRequestSchema>;
type MessagesTurn = MessagesRequest["messages"][number];

/**
 * A messages request to the simulated turn. Tool results are checked the way upstream checks them: every
 * `tool_use` of an assistant turn is answered by a `tool_result` at the start of the very next user turn,
 * and every result answers a call of the turn before it; with thinking on, the turn whose calls are being
 * answered starts with its thinking (messages-thinking-tool-loop).
 */
export function parseMessagesRequest(body: unknown): ParsedSimulatorRequest {
  const parsed = messagesRequestSchema.safeParse(body);
  if (!parsed.success) return { ok: false, message: describeIssue(parsed.error) };
  const request = parsed.data;
  const pairingError = toolPairingError(request.messages);
  if (pairingError !== undefined) return { ok: false, message: pairingError };
  const thinkingError = thinkingToolLoopError(request.thinking?.type, request.messages);
  if (thinkingError !== undefined) return { ok: false, message: thinkingError };
  const messages: SimulatedMessage[] = [];
  if (request.system)
    messages.push({
      role: "system",
      text:
        typeof request.system === "string"
          ? request.system
          : request.system.map((block) => block.text).join(""),
    });
  let imageCount = 0;
  for (const turn of request.messages) {
    const blocks = blocksOf(turn);
    imageCount += blocks.reduce((count, block) => count + imagesIn(block), 0);
    messages.push(...simulatedMessagesOf(turn.role, blocks));
  }
  const format = request.output_config?.format;
  return {
    ok: true,
    input: {
      model: request.model,
      messages,
      maxOutputTokens: request.max_tokens,
      stream: request.stream === true,
      includeStreamUsage: true,
      tools: (request.tools ?? []).map((tool) => ({ name: tool.name, parameters: tool.input_schema })),
      toolChoice: toolChoiceOf(request.tool_choice),
      parallelToolCalls:
        request.tool_choice === undefined || request.tool_choice.type === "none"
          ? true
          : request.tool_choice.disable_parallel_tool_use !== true,
      outputFormat: format ? { type: "json_schema", schema: format.schema } : undefined,
      imageCount,
    },
  };
}

function blocksOf(turn: MessagesTurn): MessagesContentBlock[] {
  return typeof turn.content === "string" ? [{ type: "text", text: turn.content }] : turn.content;
}

function imagesIn(block: MessagesContentBlock): number {
  if (block.type === "image") return 1;
  if (block.type === "tool_result" && Array.isArray(block.content))
    return block.content.filter((part) => part.type === "image").length;
  return 0;
}

/**
 * A user turn is its tool results (role "tool", as the simulated turn names them) and then, when it has
 * anything else, the user's own message; an assistant turn is its text and its calls.
 */
function simulatedMessagesOf(role: MessagesTurn["role"], blocks: readonly MessagesContentBlock[]) {
  const messages: SimulatedMessage[] = [];
  let text = "";
  let hasOwnContent = false;
  for (const block of blocks) {
    switch (block.type) {
      case "tool_result":
        messages.push({ role: "tool", text: toolResultText(block.content) });
        continue;
      case "tool_use":
        text += JSON.stringify({ name: block.name, input: block.input });
        hasOwnContent = true;
        continue;
      case "text":
        text += block.text;
        hasOwnContent = true;
        continue;
      case "image":
        hasOwnContent = true;
        continue;
      case "thinking":
      case "redacted_thinking":
        continue;
      default: {
        const unknownBlock: never = block;
        throw new Error(`unknown content block: ${JSON.stringify(unknownBlock)}`);
      }
    }
  }
  if (hasOwnContent) messages.push({ role, text });
  return messages;
}

function toolResultText(content: Extract<MessagesContentBlock, { type: "tool_result" }>["content"]): string {
  if (content === undefined) return "";
  if (typeof content === "string") return content;
  return content.map((part) => (part.type === "text" ? part.text : "")).join("");
}

function toolChoiceOf(choice: MessagesRequest["tool_choice"]): SimulatedToolChoice {
  switch (choice?.type) {
    case undefined:
    case "auto":
      return "auto";
    case "any":
      return "required";
    case "tool":
      return { name: choice.name };
    case "none":
      return "none";
    default: {
      const unknownChoice: never = choice;
      throw new Error(`unknown tool choice: ${JSON.stringify(unknownChoice)}`);
    }
  }
}

/** The upstream's own wording for calls left unanswered, results that answer nothing, and results out of place. */
function toolPairingError(turns: readonly MessagesTurn[]): string | undefined {
  for (let index = 0; index < turns.length; index += 1) {
    const blocks = blocksOf(turns[index]!);
    const previous = index > 0 ? turns[index - 1]! : undefined;
    const calledIds = new Set(
      previous?.role === "assistant"
        ? blocksOf(previous).flatMap((block) => (block.type === "tool_use" ? [block.id] : []))
        : [],
    );
    const leadingResultIds: string[] = [];
    let resultsEnded = false;
    for (const [blockIndex, block] of blocks.entries()) {
      if (block.type !== "tool_result") {
        resultsEnded = true;
        continue;
      }
      if (turns[index]!.role !== "user" || resultsEnded || !calledIds.has(block.tool_use_id))
        return (
          `messages.${index}.content.${blockIndex}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ` +
          `${block.tool_use_id}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`
        );
      leadingResultIds.push(block.tool_use_id);
    }
    const unanswered = [...calledIds].filter((id) => !leadingResultIds.includes(id));
    if (unanswered.length > 0)
      return (
        `messages.${index - 1}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ` +
        `${unanswered.join(", ")}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`
      );
  }
  return undefined;
}
