import { parseUpstreamReply } from "../http/upstream-reply";
import type { GenerationResult, ToolCall } from "../provider";
import { convertMessagesUsage } from "./convert-messages-usage";
import { mapMessagesFinishReason } from "./map-messages-finish-reason";
import { messageSchema, toolUseBlockSchema } from "./messages-schemas";

export interface MessagesReplyOptions {
  /** The forced tool standing for json_object output: its input is the reply's text, not a tool call. */
  answerToolName: string | undefined;
}

export const plainReply: MessagesReplyOptions = { answerToolName: undefined };

/**
 * A JSON message to the gateway's result: the text of its text blocks (thinking blocks are not output),
 * and its `tool_use` blocks as tool calls, their input as JSON text.
 */
export function convertMessagesResponse(
  reply: unknown,
  options: MessagesReplyOptions = plainReply,
): GenerationResult {
  const message = parseUpstreamReply(messageSchema, reply);
  let text = "";
  const toolCalls: ToolCall[] = [];
  for (const block of message.content) {
    if (block.type === "text") text += block.text ?? "";
    if (block.type !== "tool_use") continue;
    const call = parseUpstreamReply(toolUseBlockSchema, block);
    if (call.name === options.answerToolName) text += JSON.stringify(call.input);
    else toolCalls.push({ id: call.id, name: call.name, arguments: JSON.stringify(call.input) });
  }
  return {
    text,
    toolCalls,
    finishReason: message.stop_reason
      ? mapMessagesFinishReason(message.stop_reason, toolCalls.length)
      : "other",
    usage: message.usage ? convertMessagesUsage(message.usage) : null,
  };
}
