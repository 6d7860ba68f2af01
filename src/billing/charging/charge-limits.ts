import { Money } from "../../kernel/money";

/**
 * Bounds on what a charge may be computed from. They exist so that the C7 formula stays exact within
 * `Money`'s 60 significant digits: with every bound at its maximum the widest intermediate value is
 * won < 3e18 with 36 decimal places, i.e. 55 significant digits. The admin API validates prices, rates
 * and discounts against the same predicates, so a stored value can never make a charge fail.
 */
export const chargeLimits = {
  /** One request never carries a trillion tokens; the bound keeps counts far inside safe integers. */
  tokensPerRequestMax: 1_000_000_000_000,
  /** Exclusive upper bound of a unit price, USD per 1M tokens. */
  unitPriceUsdPerMillionTokensBelow: 1_000_000,
  /** Exclusive upper bound of an FX rate, KRW per USD. */
  fxRateKrwPerUsdBelow: 1_000_000,
  /** Decimal places allowed in a unit price, an FX rate and a discount rate. */
  decimalPlacesMax: 10,
} as const;

function hasAllowedDecimalPlaces(value: Money): boolean {
  return value.decimalPlaces() <= chargeLimits.decimalPlacesMax;
}

export function isAcceptableTokenCount(count: number): boolean {
  return Number.isSafeInteger(count) && count >= 0 && count <= chargeLimits.tokensPerRequestMax;
}

export function isAcceptableUnitPrice(priceUsdPerMillionTokens: Money): boolean {
  return (
    priceUsdPerMillionTokens.isFinite() &&
    priceUsdPerMillionTokens.gte(0) &&
    priceUsdPerMillionTokens.lt(chargeLimits.unitPriceUsdPerMillionTokensBelow) &&
    hasAllowedDecimalPlaces(priceUsdPerMillionTokens)
  );
}

/** A rate of 0 would make every request free: it is a data error, never a rate. */
export function isAcceptableFxRate(rateKrwPerUsd: Money): boolean {
  return (
    rateKrwPerUsd.isFinite() &&
    rateKrwPerUsd.gt(0) &&
    rateKrwPerUsd.lt(chargeLimits.fxRateKrwPerUsdBelow) &&
    hasAllowedDecimalPlaces(rateKrwPerUsd)
  );
}

export function isAcceptableDiscountRate(discountRate: Money): boolean {
  return (
    discountRate.isFinite() &&
    discountRate.gte(0) &&
    discountRate.lte(new Money(1)) &&
    hasAllowedDecimalPlaces(discountRate)
  );
}
