import { billableReportedUsage, highestCountOf } from "../billable-reported-usage";
import type { ReportedUsage } from "../provider";
import type { UsageMetadata } from "./generate-content-schemas";

/**
 * Normalises to the chat-completions meaning (C7): input = promptTokenCount, cached =
 * cachedContentTokenCount, output = candidatesTokenCount + thoughtsTokenCount, reasoning =
 * thoughtsTokenCount. The protocol omits zero counts, so output is the sum of the parts it reported and
 * null only when it reported neither. A usage that cannot be billed as reported (the sum included) is a
 * malformed reply (billable-reported-usage.ts).
 */
export function convertGenerateContentUsage(usage: UsageMetadata): ReportedUsage {
  const outputParts = [usage.candidatesTokenCount, usage.thoughtsTokenCount].filter(
    (count): count is number => count != null,
  );
  return billableReportedUsage({
    inputTokens: usage.promptTokenCount ?? null,
    cachedInputTokens: usage.cachedContentTokenCount ?? null,
    outputTokens: outputParts.length === 0 ? null : outputParts.reduce((total, count) => total + count),
    reasoningTokens: usage.thoughtsTokenCount ?? null,
  });
}

/**
 * A stream repeats its usage metadata in every chunk as running totals, so each field's higher value stands
 * (a later chunk that lowers one takes nothing from what an earlier one reported); a field left out keeps
 * the earlier value.
 */
export function mergeUsageMetadata(earlier: UsageMetadata | undefined, later: UsageMetadata): UsageMetadata {
  if (earlier === undefined) return later;
  return {
    promptTokenCount: highestCountOf(earlier.promptTokenCount, later.promptTokenCount),
    cachedContentTokenCount: highestCountOf(earlier.cachedContentTokenCount, later.cachedContentTokenCount),
    candidatesTokenCount: highestCountOf(earlier.candidatesTokenCount, later.candidatesTokenCount),
    thoughtsTokenCount: highestCountOf(earlier.thoughtsTokenCount, later.thoughtsTokenCount),
  };
}
