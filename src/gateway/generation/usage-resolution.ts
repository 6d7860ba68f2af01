import type { UsageSource, UsageTokens } from "../../ledger/events";
import type { GenerationRequest, ReportedUsage, ToolCall } from "../../providers/provider";
import type { ClientUsage } from "./client-format";
import { estimateInputTokens, estimateOutputTokens } from "./token-estimator";

/**
 * The usage to record: the upstream's counts where it reported them, our own count of the prompt and of
 * the text and tool calls actually produced where it did not (source `estimated`). Cached and reasoning counts stay
 * "not reported" (null) in the ledger rather than becoming a silent 0.
 */
export interface ResolvedUsage {
  tokens: UsageTokens;
  source: UsageSource;
  client: ClientUsage;
}

export function resolveUsage(
  reported: ReportedUsage | null,
  request: GenerationRequest,
  produced: { text: string; refusal?: string | undefined; toolCalls: readonly ToolCall[] },
): ResolvedUsage {
  const inputTokens = reported?.inputTokens ?? null;
  const outputTokens = reported?.outputTokens ?? null;
  const estimated = inputTokens === null || outputTokens === null;
  const tokens: UsageTokens = {
    input: inputTokens ?? estimateInputTokens(request),
    cached: reported?.cachedInputTokens ?? null,
    output:
      outputTokens ?? estimateOutputTokens(produced.text + (produced.refusal ?? ""), produced.toolCalls),
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
