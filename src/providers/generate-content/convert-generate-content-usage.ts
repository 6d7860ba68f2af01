import { billableReportedUsage } from "../billable-reported-usage";
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
