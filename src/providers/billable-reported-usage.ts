import { isAcceptableTokenCount } from "../kernel/charge-limits";
import { chargeLimits } from "../kernel/limits";
import { type ReportedUsage, UpstreamFailedError } from "./provider";

/**
 * The rules every protocol's reported usage meets before anything bills it (docs/billing.md, "Usage the
 * upstream reports"). The upstream's counts decide what the client pays, so a usage the ledger could not
 * price as reported is never capped, guessed at or partly kept: it is a malformed reply, as a count that is
 * not a whole number already is by the protocols' schemas.
 */

const countNames = {
  inputTokens: "input",
  cachedInputTokens: "cached input",
  outputTokens: "output",
  reasoningTokens: "reasoning",
} as const satisfies Record<keyof ReportedUsage, string>;

/**
 * The usage as reported, once every count it gave (sums of a protocol's parts included) is a whole number
 * from 0 to `tokensPerRequestMax`, cached input within the input and reasoning within the output where the
 * upstream reported both. A part reported without its total (cached input without the input) passes: the
 * gateway counts that total itself and keeps no part beside its own count (usage-resolution.ts).
 */
export function billableReportedUsage(usage: ReportedUsage): ReportedUsage {
  const defect = defectOf(usage);
  if (defect !== undefined)
    throw new UpstreamFailedError("malformed", `upstream reported a usage that cannot be billed: ${defect}`);
  return usage;
}

/**
 * A usage a stream reports more than once gives running totals of the whole answer so far, which only grow:
 * each count is the highest reported, so a later report that lowers one (an upstream that sends 0 input at
 * its end) takes nothing from what it reported before, and a count a report leaves out keeps the earlier
 * value. For a chat-completions upstream that reports usage in several chunks; messages and generateContent
 * merge their own fields this way (`highestCountOf`), since their totals add up fields each may leave out.
 */
export function runningTotalsOf(earlier: ReportedUsage | null, later: ReportedUsage): ReportedUsage {
  if (earlier === null) return later;
  return billableReportedUsage({
    inputTokens: highestCountOf(earlier.inputTokens, later.inputTokens),
    cachedInputTokens: highestCountOf(earlier.cachedInputTokens, later.cachedInputTokens),
    outputTokens: highestCountOf(earlier.outputTokens, later.outputTokens),
    reasoningTokens: highestCountOf(earlier.reasoningTokens, later.reasoningTokens),
  });
}

/** One running total: the higher of two reports, or the one reported when the other left it out. */
export function highestCountOf<Absent extends null | undefined>(
  earlier: number | Absent,
  later: number | Absent,
): number | Absent {
  if (earlier == null) return later;
  if (later == null) return earlier;
  return Math.max(earlier, later);
}

function defectOf(usage: ReportedUsage): string | undefined {
  for (const name of Object.keys(countNames) as (keyof ReportedUsage)[]) {
    const count = usage[name];
    if (count !== null && !isAcceptableTokenCount(count))
      return `its ${countNames[name]} is not a count from 0 to ${chargeLimits.tokensPerRequestMax} tokens`;
  }
  const { inputTokens, cachedInputTokens, outputTokens, reasoningTokens } = usage;
  if (inputTokens !== null && cachedInputTokens !== null && cachedInputTokens > inputTokens)
    return "its cached input exceeds its input";
  if (outputTokens !== null && reasoningTokens !== null && reasoningTokens > outputTokens)
    return "its reasoning exceeds its output";
  return undefined;
}
