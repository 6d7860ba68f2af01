import { countTokens } from "gpt-tokenizer/encoding/o200k_base";
import type { GenerationMessage } from "../../providers/provider";

/**
 * Token counts for when the upstream reported none (client disconnect, upstream failure mid-stream). Uses
 * the o200k_base encoding and the chat-format overhead of 3 tokens per message plus 3 for the reply.
 */

const tokensPerMessage = 3;
const tokensPerReply = 3;

export function estimateInputTokens(messages: readonly GenerationMessage[]): number {
  let total = tokensPerReply;
  for (const message of messages) total += tokensPerMessage + countTokens(message.content);
  return total;
}

export function estimateOutputTokens(text: string): number {
  return text === "" ? 0 : countTokens(text);
}
