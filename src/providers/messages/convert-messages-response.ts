import { parseUpstreamReply } from "../http/upstream-reply";
import type { GenerationResult } from "../provider";
import { convertMessagesUsage } from "./convert-messages-usage";
import { mapMessagesFinishReason } from "./map-messages-finish-reason";
import { messageSchema } from "./messages-schemas";

/** A JSON message to the gateway's result: the text of its text blocks (thinking blocks are not output). */
export function convertMessagesResponse(reply: unknown): GenerationResult {
  const message = parseUpstreamReply(messageSchema, reply);
  return {
    toolCalls: [],
    text: message.content
      .filter((block) => block.type === "text")
      .map((block) => block.text ?? "")
      .join(""),
    finishReason: message.stop_reason ? mapMessagesFinishReason(message.stop_reason) : "other",
    usage: message.usage ? convertMessagesUsage(message.usage) : null,
  };
}
