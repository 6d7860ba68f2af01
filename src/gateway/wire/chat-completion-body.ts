import { assertBilledUsage, type BilledUsage } from "./billed-usage";
import { type ChatFinishReason, chatFinishReasonOf } from "./chat-finish-reason";
import { type CompletedReply, unixSecondsOf } from "./wire-reply";

/**
 * The non-streaming chat completion body, exactly as interface.md shows it. The usage is the billed one:
 * prompt_tokens includes cached input and completion_tokens includes reasoning, as in the protocol itself.
 * The cached and reasoning breakdown is not added: the official client does not need it and C5 adds only
 * what a client needs.
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
      message: { role: "assistant"; content: string };
      finish_reason: ChatFinishReason;
    },
  ];
  usage: ChatCompletionUsageBody;
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
        message: { role: "assistant", content: reply.text },
        finish_reason: chatFinishReasonOf(reply.finishReason),
      },
    ],
    usage: chatCompletionUsageOf(reply.usage),
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
