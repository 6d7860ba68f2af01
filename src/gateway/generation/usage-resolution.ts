import type { UsageSource, UsageTokens } from "../../ledger/events";
import type { GenerationRequest, ReportedUsage, ToolCall } from "../../providers/provider";
import type { ClientUsage } from "./client-format";
import { estimateInputTokens, estimateOutputTokens } from "./token-estimator";

/**
 * The usage to record: the upstream's counts where it reported them, our own count of the prompt and of
 * the text and tool calls actually produced where it did not (source `estimated`). Cached and reasoning counts stay
 * "not reported" (null) in the ledger rather than becoming a silent 0. A part is kept only beside the total
 * the upstream reported it in (cached input beside its input, reasoning beside its output): beside the
 * gateway's own count of that total it could exceed it, and the gateway never guesses how much of its count
 * the part is, so an input it counted is billed at the input price throughout.
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
    cached: inputTokens === null ? null : (reported?.cachedInputTokens ?? null),
    output:
      outputTokens ?? estimateOutputTokens(produced.text + (produced.refusal ?? ""), produced.toolCalls),
    reasoning: outputTokens === null ? null : (reported?.reasoningTokens ?? null),
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
