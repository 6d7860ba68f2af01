import { billableReportedUsage, highestCountOf } from "../billable-reported-usage";
import type { ReportedUsage } from "../provider";
import type { MessagesUsage } from "./messages-schemas";

/**
 * Normalises to the chat-completions meaning (C7): input = input_tokens + cache_read_input_tokens +
 * cache_creation_input_tokens, cached = cache_read_input_tokens, output = output_tokens. Without
 * input_tokens the total input is unknown (null); a cache count the upstream left out adds nothing to the
 * total and is itself reported as null, never as 0. A usage that cannot be billed as reported (the sum
 * included) is a malformed reply (billable-reported-usage.ts).
 */
export function convertMessagesUsage(usage: MessagesUsage): ReportedUsage {
  const inputTokens =
    usage.input_tokens == null
      ? null
      : [usage.input_tokens, usage.cache_read_input_tokens, usage.cache_creation_input_tokens]
          .filter((count): count is number => count != null)
          .reduce((total, count) => total + count);
  return billableReportedUsage({
    inputTokens,
    cachedInputTokens: usage.cache_read_input_tokens ?? null,
    outputTokens: usage.output_tokens ?? null,
    reasoningTokens: usage.output_tokens_details?.thinking_tokens ?? null,
  });
}

/**
 * A stream reports usage in `message_start` and again, cumulatively, in `message_delta`. Each field is a
 * whole-message running total, so the higher value stands (an upstream that sends 0 input in its
 * `message_delta` takes nothing from `message_start`'s); a field left out keeps the earlier value.
 */
export function mergeMessagesUsage(earlier: MessagesUsage | undefined, later: MessagesUsage): MessagesUsage {
  if (earlier === undefined) return later;
  return {
    input_tokens: highestCountOf(earlier.input_tokens, later.input_tokens),
    cache_read_input_tokens: highestCountOf(earlier.cache_read_input_tokens, later.cache_read_input_tokens),
    cache_creation_input_tokens: highestCountOf(
      earlier.cache_creation_input_tokens,
      later.cache_creation_input_tokens,
    ),
    output_tokens: highestCountOf(earlier.output_tokens, later.output_tokens),
    output_tokens_details: {
      thinking_tokens: highestCountOf(
        earlier.output_tokens_details?.thinking_tokens,
        later.output_tokens_details?.thinking_tokens,
      ),
    },
  };
}
