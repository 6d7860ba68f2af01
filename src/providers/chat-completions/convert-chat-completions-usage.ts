import { billableReportedUsage } from "../billable-reported-usage";
import type { ReportedUsage } from "../provider";
import type { ChatCompletionsUsage } from "./chat-completions-schemas";

/**
 * The chat-completions meaning is already the gateway's (C7): input includes cached, output reasoning. A
 * usage that cannot be billed as reported is a malformed reply (billable-reported-usage.ts).
 */
export function convertChatCompletionsUsage(usage: ChatCompletionsUsage): ReportedUsage {
  return billableReportedUsage({
    inputTokens: usage.prompt_tokens ?? null,
    cachedInputTokens: usage.prompt_tokens_details?.cached_tokens ?? null,
    outputTokens: usage.completion_tokens ?? null,
    reasoningTokens: usage.completion_tokens_details?.reasoning_tokens ?? null,
  });
}
