import { countTokens as countO200kTokens } from "gpt-tokenizer/encoding/o200k_base";
import { boundedTokenCounter } from "../../providers/bounded-token-count";
import type { GenerationRequest, ToolCall } from "../../providers/provider";

/** A client's message may be one 1 MB word: counted at a cost bounded by its length. */
const countTokens = boundedTokenCounter(countO200kTokens);

/**
 * Token counts for what the upstream did not report (a stream cut before its final usage). Uses the
 * o200k_base encoding and the chat-format overhead of 3 tokens per message plus 3 for the reply.
 */

const tokensPerMessage = 3;
const tokensPerReply = 3;
/**
 * An image's tokens cannot be counted without decoding it; this is what one 1024×1024 image costs at high
 * detail under the chat-completions tile rule (85 + 4 × 170), the common case of a photo a client sends.
 */
export const estimatedTokensPerImage = 765;

/** Everything the upstream reads: the messages, their images and tool calls, the tools and the schema. */
export function estimateInputTokens(request: GenerationRequest): number {
  let total = tokensPerReply;
  for (const message of request.messages) {
    total += tokensPerMessage;
    switch (message.role) {
      case "user":
        for (const part of message.content)
          total += part.type === "text" ? countTokens(part.text) : estimatedTokensPerImage;
        break;
      case "assistant":
        total += countTokens(message.content) + toolCallTokens(message.toolCalls);
        break;
      case "system":
      case "tool":
        total += countTokens(message.content);
        break;
    }
  }
  if (request.tools && request.tools.length > 0) total += countTokens(JSON.stringify(request.tools));
  if (request.outputFormat?.type === "json_schema")
    total += countTokens(JSON.stringify(request.outputFormat.schema));
  return total;
}

/** The reply's text and the calls it made: tool-call names and arguments are output like any text (C7). */
export function estimateOutputTokens(text: string, toolCalls: readonly ToolCall[] = []): number {
  return (text === "" ? 0 : countTokens(text)) + toolCallTokens(toolCalls);
}

function toolCallTokens(toolCalls: readonly ToolCall[]): number {
  let total = 0;
  for (const call of toolCalls) total += countTokens(call.name) + countTokens(call.arguments);
  return total;
}
