import { billableReportedUsage } from "../billable-reported-usage";
import type { ReportedUsage } from "../provider";
import type { ResponsesUsage } from "./responses-schemas";

/**
 * The responses meaning matches the gateway's (C7): input includes cached, output includes reasoning. A
 * usage that cannot be billed as reported is a malformed reply (billable-reported-usage.ts).
 */
export function convertResponsesUsage(usage: ResponsesUsage): ReportedUsage {
  return billableReportedUsage({
    inputTokens: usage.input_tokens ?? null,
    cachedInputTokens: usage.input_tokens_details?.cached_tokens ?? null,
    outputTokens: usage.output_tokens ?? null,
    reasoningTokens: usage.output_tokens_details?.reasoning_tokens ?? null,
  });
}
