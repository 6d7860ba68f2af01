import { chargeLimits } from "./limits";
import { Money } from "./money";

/**
 * Whether a value is within `chargeLimits` (src/kernel/limits.ts says why the bounds exist). The admin API
 * and the models file validate prices, rates and discounts against these same predicates, so a stored value
 * can never make a charge fail.
 */

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
