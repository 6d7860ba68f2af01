import type { UsageSource, UsageTokens } from "../../ledger/events";
import type { GenerationMessage, ReportedUsage } from "../../providers/provider";
import type { ClientUsage } from "./client-format";
import { estimateInputTokens, estimateOutputTokens } from "./token-estimator";

/**
 * The usage to record: the upstream's counts where it reported them, our own count of the prompt and of
 * the text actually produced where it did not (source `estimated`). Cached and reasoning counts stay
 * "not reported" (null) in the ledger rather than becoming a silent 0.
 */
export interface ResolvedUsage {
  tokens: UsageTokens;
  source: UsageSource;
  client: ClientUsage;
}

export function resolveUsage(
  reported: ReportedUsage | null,
  messages: readonly GenerationMessage[],
  producedText: string,
): ResolvedUsage {
  const inputTokens = reported?.inputTokens ?? null;
  const outputTokens = reported?.outputTokens ?? null;
  const estimated = inputTokens === null || outputTokens === null;
  const tokens: UsageTokens = {
    input: inputTokens ?? estimateInputTokens(messages),
    cached: reported?.cachedInputTokens ?? null,
    output: outputTokens ?? estimateOutputTokens(producedText),
    reasoning: reported?.reasoningTokens ?? null,
  };
  return {
    tokens,
    source: estimated ? "estimated" : "upstream",
    client: {
      inputTokens: tokens.input,
      cachedInputTokens: tokens.cached ?? 0,
      outputTokens: tokens.output,
      reasoningTokens: tokens.reasoning ?? 0,
    },
  };
}
