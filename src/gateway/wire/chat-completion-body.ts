import type { ToolCall } from "../../providers/provider";
import { assertBilledUsage, type BilledUsage } from "./billed-usage";
import { type ChatFinishReason, chatFinishReasonOf } from "./chat-finish-reason";
import { type CompletedReply, unixSecondsOf } from "./wire-reply";

/**
 * The non-streaming chat completion body, exactly as interface.md shows it. The usage is the billed one:
 * prompt_tokens includes cached input and completion_tokens includes reasoning, as in the protocol itself.
 * The cached and reasoning breakdown is not added: the official client does not need it and C5 adds only
 * what a client needs.
 *
 * A reply with tool calls carries them as `message.tool_calls`, in the order the model made them, with
 * `content` null when the model wrote no text beside them, as the protocol shows it. A refusal is
 * `message.refusal`, with `content` null.
 */

export interface ChatCompletionUsageBody {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

export interface ChatCompletionBody {
  id: string;
  object: "chat.completion";
  created: number;
  model: string;
  choices: [
    {
      index: 0;
      message: ChatCompletionMessageBody;
      finish_reason: ChatFinishReason;
    },
  ];
  usage: ChatCompletionUsageBody;
}

export interface ChatCompletionToolCallBody {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

export interface ChatCompletionMessageBody {
  role: "assistant";
  content: string | null;
  /** Only when the model declined: its words, beside no content (as the protocol shows a refusal). */
  refusal?: string;
  tool_calls?: ChatCompletionToolCallBody[];
}

export function chatCompletionIdOf(createdAtMs: number): string {
  return `chatcmpl-${createdAtMs}`;
}

export function chatCompletionBodyOf(reply: CompletedReply): ChatCompletionBody {
  return {
    id: chatCompletionIdOf(reply.createdAtMs),
    object: "chat.completion",
    created: unixSecondsOf(reply.createdAtMs),
    model: reply.model,
    choices: [
      {
        index: 0,
        message: chatCompletionMessageOf(reply.text, reply.toolCalls, reply.refusal),
        finish_reason: chatFinishReasonOf(reply.finishReason),
      },
    ],
    usage: chatCompletionUsageOf(reply.usage),
  };
}

function chatCompletionMessageOf(
  text: string,
  toolCalls: readonly ToolCall[],
  refusal: string | undefined,
): ChatCompletionMessageBody {
  if (refusal) return { role: "assistant", content: text === "" ? null : text, refusal };
  if (toolCalls.length === 0) return { role: "assistant", content: text };
  return {
    role: "assistant",
    content: text === "" ? null : text,
    tool_calls: toolCalls.map((call) => ({
      id: call.id,
      type: "function",
      function: { name: call.name, arguments: call.arguments },
    })),
  };
}

export function chatCompletionUsageOf(usage: BilledUsage): ChatCompletionUsageBody {
  assertBilledUsage(usage);
  return {
    prompt_tokens: usage.inputTokens,
    completion_tokens: usage.outputTokens,
    total_tokens: usage.inputTokens + usage.outputTokens,
  };
}
