import type { MessagesContentBlock } from "./request-schemas";

interface MessagesTurn {
  role: "user" | "assistant";
  content: string | MessagesContentBlock[];
}

/**
 * The upstream's rule for thinking in a tool loop: with thinking on, the last assistant turn, when only turns
 * of tool results follow it (the model is still in the turn that called the tools), must start with its
 * thinking block as the model gave it. A client that dropped that block is refused, in the upstream's words
 * (its spelling included); a new user turn of its own ends the loop, and with it the rule.
 */
export function thinkingToolLoopError(
  thinking: "enabled" | "adaptive" | "disabled" | undefined,
  turns: readonly MessagesTurn[],
): string | undefined {
  if (thinking !== "enabled" && thinking !== "adaptive") return undefined;
  const lastAssistantIndex = turns.findLastIndex((turn) => turn.role === "assistant");
  if (lastAssistantIndex === -1) return undefined;
  const following = turns.slice(lastAssistantIndex + 1);
  const inToolLoop =
    following.length > 0 &&
    following.every(
      (turn) =>
        turn.role === "user" &&
        typeof turn.content !== "string" &&
        turn.content.some((block) => block.type === "tool_result"),
    );
  if (!inToolLoop) return undefined;
  const content = turns[lastAssistantIndex]!.content;
  const firstType = typeof content === "string" ? "text" : content[0]!.type;
  if (firstType === "thinking" || firstType === "redacted_thinking") return undefined;
  return (
    `messages.${lastAssistantIndex}.content.0.type: Expected \`thinking\` or \`redacted_thinking\`, but found ` +
    `\`${firstType}\`. When \`thinking\` is enabled, a final \`assistant\` message must start with a thinking ` +
    "block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include " +
    "thinking blocks from previous turns. To avoid this requirement, disable `thinking`. Please consult our " +
    "documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
  );
}
