import type { ChargeBreakdownData, UsageSource, UsageTokens } from "../../ledger/events";
import type { ChargeBreakdown, TokenCounts } from "./charge-calculation";

/**
 * The two shapes of one breakdown: `ChargeBreakdown` (what `calculateCharge` computes, every count known)
 * and the event's `breakdown` (what the ledger keeps: token counts as the upstream reported them, with
 * null for "not reported", and the usage source). The mapping is here once, for the reconciler and for
 * anything that recomputes a stored charge.
 */

/** C7: a count the upstream did not report is priced as 0 — it is recorded as null, never as 0. */
export function tokenCountsForPricing(tokens: UsageTokens): TokenCounts {
  return {
    inputTokens: tokens.input,
    cachedInputTokens: tokens.cached ?? 0,
    outputTokens: tokens.output,
    reasoningTokens: tokens.reasoning ?? 0,
  };
}

export function recordedBreakdownOf(
  breakdown: ChargeBreakdown,
  reportedTokens: UsageTokens,
  usageSource: UsageSource,
): ChargeBreakdownData {
  return {
    tokens: reportedTokens,
    inputUsdPerMillionTokens: breakdown.inputUsdPerMillionTokens,
    cachedInputUsdPerMillionTokens: breakdown.cachedInputUsdPerMillionTokens,
    outputUsdPerMillionTokens: breakdown.outputUsdPerMillionTokens,
    usd: breakdown.amountUsd,
    fxRateKrwPerUsd: breakdown.fxRateKrwPerUsd,
    fxRateDate: breakdown.fxRateDate,
    discountRate: breakdown.discountRate,
    amountWon: breakdown.amountWon,
    usageSource,
  };
}

/** The calculator's view of a stored breakdown, to recompute its amount (finance, `ledger verify`). */
export function chargeBreakdownOfRecorded(recorded: ChargeBreakdownData): ChargeBreakdown {
  const counts = tokenCountsForPricing(recorded.tokens);
  return {
    ...counts,
    inputUsdPerMillionTokens: recorded.inputUsdPerMillionTokens,
    cachedInputUsdPerMillionTokens: recorded.cachedInputUsdPerMillionTokens,
    outputUsdPerMillionTokens: recorded.outputUsdPerMillionTokens,
    fxRateKrwPerUsd: recorded.fxRateKrwPerUsd,
    fxRateDate: recorded.fxRateDate,
    discountRate: recorded.discountRate,
    amountUsd: recorded.usd,
    amountWon: recorded.amountWon,
  };
}
