import {
  isAcceptableDiscountRate,
  isAcceptableFxRate,
  isAcceptableTokenCount,
  isAcceptableUnitPrice,
} from "../../kernel/charge-limits";
import {
  chargeDecimalPlaces,
  formatMoney,
  formatMoneyFixed,
  Money,
  parseMoney,
  roundChargeWon,
} from "../../kernel/money";
import { type IsoDate, isIsoDate } from "../../kernel/seoul-calendar";

/**
 * Token counts in the chat-completions meaning (C7): input includes cached input, output includes
 * reasoning. By the time a charge is computed every count is known; "not reported" is resolved earlier.
 */
export interface TokenCounts {
  inputTokens: number;
  cachedInputTokens: number;
  outputTokens: number;
  reasoningTokens: number;
}

export interface UnitPrices {
  inputUsdPerMillionTokens: Money;
  cachedInputUsdPerMillionTokens: Money;
  outputUsdPerMillionTokens: Money;
}

export interface FxRateInForce {
  rateKrwPerUsd: Money;
  /** The bank business day the rate was published for (not the day it applies on). */
  rateDate: IsoDate;
}

export interface ChargeInput {
  tokens: TokenCounts;
  unitPrices: UnitPrices;
  fxRate: FxRateInForce;
  /** 0 ≤ rate ≤ 1; "0.15" is 15% off. */
  discountRate: Money;
}

/**
 * Everything finance needs to recompute a charge, money as decimal strings, ready to go into an event.
 * Recomputing `calculateCharge(chargeInputOfBreakdown(b))` reproduces `amountWon` exactly.
 */
export interface ChargeBreakdown {
  inputTokens: number;
  cachedInputTokens: number;
  outputTokens: number;
  reasoningTokens: number;
  inputUsdPerMillionTokens: string;
  cachedInputUsdPerMillionTokens: string;
  outputUsdPerMillionTokens: string;
  fxRateKrwPerUsd: string;
  fxRateDate: IsoDate;
  discountRate: string;
  /** Exact, never rounded. */
  amountUsd: string;
  /** Rounded once, half-up, to micro-won; always six decimal places ("1234.500000"). */
  amountWon: string;
}

const tokensPerMillion = new Money(1_000_000);

/** Throws a RangeError naming what makes `input` unpriceable (the limits of charge-limits.ts, C7's inclusions). */
export function assertChargeInput(input: ChargeInput): void {
  assertTokenCounts(input.tokens);
  assertChargeTerms(input);
}

/** The token counts' part of `assertChargeInput`. */
function assertTokenCounts(tokens: TokenCounts): void {
  for (const [name, count] of Object.entries(tokens)) {
    if (!isAcceptableTokenCount(count)) throw new RangeError(`${name} is not an acceptable count: ${count}`);
  }
  if (tokens.cachedInputTokens > tokens.inputTokens) {
    throw new RangeError("cachedInputTokens exceeds inputTokens: input must include cached input (C7)");
  }
  if (tokens.reasoningTokens > tokens.outputTokens) {
    throw new RangeError("reasoningTokens exceeds outputTokens: output must include reasoning (C7)");
  }
}

/** The terms' part of `assertChargeInput`: prices, FX rate and discount, whatever the tokens. */
export function assertChargeTerms({ unitPrices, fxRate, discountRate }: Omit<ChargeInput, "tokens">): void {
  for (const [name, price] of Object.entries(unitPrices)) {
    if (!isAcceptableUnitPrice(price)) throw new RangeError(`${name} is not an acceptable price: ${price}`);
  }
  if (!isAcceptableFxRate(fxRate.rateKrwPerUsd)) {
    throw new RangeError(`fx rate is not acceptable: ${fxRate.rateKrwPerUsd}`);
  }
  if (!isIsoDate(fxRate.rateDate)) throw new RangeError(`fx rate date is not a date: ${fxRate.rateDate}`);
  if (!isAcceptableDiscountRate(discountRate)) {
    throw new RangeError(`discount rate is not in [0, 1]: ${discountRate}`);
  }
}

/**
 * The C7 charge of one request:
 *   usd = ((input − cached) × inputPrice + cached × cachedPrice + output × outputPrice) / 1,000,000
 *   won = usd × fxRate × (1 − discount)
 * Every step is exact (see charge-limits.ts for why 60 digits suffice); `won` is rounded once, half-up,
 * to 6 decimal places. Reasoning tokens are already inside output tokens, so they are not added again.
 */
export function calculateCharge(input: ChargeInput): ChargeBreakdown {
  assertChargeInput(input);
  const { tokens, unitPrices, fxRate, discountRate } = input;
  const { amountUsd, amountWonExact } = exactAmountsOf(input);
  return {
    inputTokens: tokens.inputTokens,
    cachedInputTokens: tokens.cachedInputTokens,
    outputTokens: tokens.outputTokens,
    reasoningTokens: tokens.reasoningTokens,
    inputUsdPerMillionTokens: formatMoney(unitPrices.inputUsdPerMillionTokens),
    cachedInputUsdPerMillionTokens: formatMoney(unitPrices.cachedInputUsdPerMillionTokens),
    outputUsdPerMillionTokens: formatMoney(unitPrices.outputUsdPerMillionTokens),
    fxRateKrwPerUsd: formatMoney(fxRate.rateKrwPerUsd),
    fxRateDate: fxRate.rateDate,
    discountRate: formatMoney(discountRate),
    amountUsd: formatMoney(amountUsd),
    amountWon: formatMoneyFixed(roundChargeWon(amountWonExact), chargeDecimalPlaces),
  };
}

/**
 * `calculateCharge(input).amountWon` for terms already asserted with `assertChargeTerms`: the request path
 * prices every hold and pending cost of a model with the same terms and keeps none of the breakdown, so it
 * asserts the terms once (hold-pricing.ts) and here only the tokens.
 */
export function chargeWonOf(input: ChargeInput): string {
  assertTokenCounts(input.tokens);
  return formatMoneyFixed(roundChargeWon(exactAmountsOf(input).amountWonExact), chargeDecimalPlaces);
}

/** The formula above, exact at every step: both amounts before the one rounding. */
function exactAmountsOf({ tokens, unitPrices, fxRate, discountRate }: ChargeInput): {
  amountUsd: Money;
  amountWonExact: Money;
} {
  const uncachedInputTokens = new Money(tokens.inputTokens - tokens.cachedInputTokens);
  const usdTimesMillion = uncachedInputTokens
    .times(unitPrices.inputUsdPerMillionTokens)
    .plus(new Money(tokens.cachedInputTokens).times(unitPrices.cachedInputUsdPerMillionTokens))
    .plus(new Money(tokens.outputTokens).times(unitPrices.outputUsdPerMillionTokens));
  const amountUsd = usdTimesMillion.dividedBy(tokensPerMillion);
  const amountWonExact = amountUsd.times(fxRate.rateKrwPerUsd).times(new Money(1).minus(discountRate));
  return { amountUsd, amountWonExact };
}

/** The input a breakdown was computed from, for recomputation by finance or `ledger verify`. */
export function chargeInputOfBreakdown(breakdown: ChargeBreakdown): ChargeInput {
  return {
    tokens: {
      inputTokens: breakdown.inputTokens,
      cachedInputTokens: breakdown.cachedInputTokens,
      outputTokens: breakdown.outputTokens,
      reasoningTokens: breakdown.reasoningTokens,
    },
    unitPrices: {
      inputUsdPerMillionTokens: parseMoney(breakdown.inputUsdPerMillionTokens),
      cachedInputUsdPerMillionTokens: parseMoney(breakdown.cachedInputUsdPerMillionTokens),
      outputUsdPerMillionTokens: parseMoney(breakdown.outputUsdPerMillionTokens),
    },
    fxRate: { rateKrwPerUsd: parseMoney(breakdown.fxRateKrwPerUsd), rateDate: breakdown.fxRateDate },
    discountRate: parseMoney(breakdown.discountRate),
  };
}
