import Decimal from "decimal.js";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  type ChargeInput,
  calculateCharge,
  chargeInputOfBreakdown,
  chargeWonOf,
  type TokenCounts,
} from "../../src/billing/charging/charge-calculation";
import { chargeLimits } from "../../src/kernel/limits";
import { type Money, parseMoney, sumMoney } from "../../src/kernel/money";

/** An oracle independent of `Money`: 1000 significant digits, far beyond anything the formula needs. */
const WideDecimal = Decimal.clone({ precision: 1000, rounding: Decimal.ROUND_HALF_UP });

const decimalPlacesMax = chargeLimits.decimalPlacesMax;

/** A decimal string in [0, below) with up to 10 decimal places, built from an integer of scaled units. */
function decimalString(below: bigint, options: { inclusive?: boolean; positive?: boolean } = {}) {
  return fc.integer({ min: 0, max: decimalPlacesMax }).chain((decimalPlaces) => {
    const scale = 10n ** BigInt(decimalPlaces);
    const unitsMax = below * scale - (options.inclusive === true ? 0n : 1n);
    return fc.bigInt({ min: options.positive === true ? 1n : 0n, max: unitsMax }).map((units) => {
      const digits = units.toString().padStart(decimalPlaces + 1, "0");
      if (decimalPlaces === 0) return digits;
      return `${digits.slice(0, -decimalPlaces)}.${digits.slice(-decimalPlaces)}`;
    });
  });
}

const tokenCount = (max: bigint) => fc.bigInt({ min: 0n, max }).map(Number);

/** Counts within the per-request limit (input ≤ 2 × eachMax, output ≤ 2 × eachMax). */
const tokensUpTo = (eachMax: bigint): fc.Arbitrary<TokenCounts> =>
  fc
    .record({ uncached: tokenCount(eachMax), cached: tokenCount(eachMax), output: tokenCount(2n * eachMax) })
    .chain(({ uncached, cached, output }) =>
      tokenCount(BigInt(output)).map((reasoning) => ({
        inputTokens: uncached + cached,
        cachedInputTokens: cached,
        outputTokens: output,
        reasoningTokens: reasoning,
      })),
    );

/** Half the per-request bound: input (uncached + cached) and output each stay within it. */
const eachTokensMax = BigInt(Math.floor(chargeLimits.tokensPerRequestMax / 2));
const tokensArbitrary = tokensUpTo(eachTokensMax);

const priceArbitrary = decimalString(BigInt(chargeLimits.unitPriceUsdPerMillionTokensBelow)).map(parseMoney);

const termsArbitrary = fc.record({
  unitPrices: fc.record({
    inputUsdPerMillionTokens: priceArbitrary,
    cachedInputUsdPerMillionTokens: priceArbitrary,
    outputUsdPerMillionTokens: priceArbitrary,
  }),
  fxRate: fc.record({
    rateKrwPerUsd: decimalString(BigInt(chargeLimits.fxRateKrwPerUsdBelow), { positive: true }).map(
      parseMoney,
    ),
    rateDate: fc.constant("2026-03-03"),
  }),
  discountRate: decimalString(1n, { inclusive: true }).map(parseMoney),
});

const chargeInputArbitrary: fc.Arbitrary<ChargeInput> = fc
  .record({ tokens: tokensArbitrary, terms: termsArbitrary })
  .map(({ tokens, terms }) => ({ tokens, ...terms }));

/** The C7 formula evaluated from the breakdown's strings alone, at 1000 digits, rounded half-up once. */
function wideAmountWon(breakdown: ReturnType<typeof calculateCharge>): string {
  const wide = (text: string | number) => new WideDecimal(text);
  const usd = wide(breakdown.inputTokens - breakdown.cachedInputTokens)
    .times(wide(breakdown.inputUsdPerMillionTokens))
    .plus(wide(breakdown.cachedInputTokens).times(wide(breakdown.cachedInputUsdPerMillionTokens)))
    .plus(wide(breakdown.outputTokens).times(wide(breakdown.outputUsdPerMillionTokens)))
    .dividedBy(1_000_000);
  return usd
    .times(wide(breakdown.fxRateKrwPerUsd))
    .times(wide(1).minus(wide(breakdown.discountRate)))
    .toFixed(6, Decimal.ROUND_HALF_UP);
}

/** Micro-won as an exact BigInt, read from the fixed six-place string: a second, independent oracle. */
function microWonOf(amountWon: string): bigint {
  expect(amountWon).toMatch(/^\d+\.\d{6}$/);
  return BigInt(amountWon.replace(".", ""));
}

describe("calculateCharge properties", () => {
  const maxPrice = "999999.9999999999";
  const extremeInput: ChargeInput = {
    tokens: {
      inputTokens: chargeLimits.tokensPerRequestMax,
      cachedInputTokens: 1,
      outputTokens: chargeLimits.tokensPerRequestMax,
      reasoningTokens: chargeLimits.tokensPerRequestMax - 1,
    },
    unitPrices: {
      inputUsdPerMillionTokens: parseMoney(maxPrice),
      cachedInputUsdPerMillionTokens: parseMoney("0.0000000001"),
      outputUsdPerMillionTokens: parseMoney(maxPrice),
    },
    fxRate: { rateKrwPerUsd: parseMoney(maxPrice), rateDate: "2026-03-03" },
    discountRate: parseMoney("0.0000000001"),
  };

  it("is exact: equals the formula at 1000 digits, and recomputing from the breakdown reproduces it", () => {
    fc.assert(
      fc.property(chargeInputArbitrary, (input) => {
        // given any acceptable input
        // when
        const breakdown = calculateCharge(input);
        // then
        expect(breakdown.amountWon).toBe(wideAmountWon(breakdown));
        expect(calculateCharge(chargeInputOfBreakdown(breakdown)).amountWon).toBe(breakdown.amountWon);
      }),
      { numRuns: 500, examples: [[extremeInput]] },
    );
  });

  it("prices the request path's amounts as the breakdown does: chargeWonOf is calculateCharge's amountWon", () => {
    fc.assert(
      fc.property(chargeInputArbitrary, (input) => {
        // given any acceptable input
        // when
        const amountWon = chargeWonOf(input);
        // then
        const breakdown = calculateCharge(input);
        expect(amountWon).toBe(breakdown.amountWon);
        expect(amountWon).toBe(wideAmountWon(breakdown));
      }),
      { numRuns: 500, examples: [[extremeInput]] },
    );
  });

  it("sums many charges exactly: the balance movement equals the sum of the amounts", () => {
    fc.assert(
      fc.property(fc.array(chargeInputArbitrary, { minLength: 1, maxLength: 60 }), (inputs) => {
        // given an opening balance and many charges
        const openingBalanceWon = parseMoney("10000");
        const amounts = inputs.map((input) => calculateCharge(input).amountWon);
        // when each charge is debited in turn, as the balance projection does
        let balanceWon: Money = openingBalanceWon;
        for (const amount of amounts) balanceWon = balanceWon.minus(parseMoney(amount));
        // then the movement is the exact sum, to the micro-won
        const movementWon = openingBalanceWon.minus(balanceWon);
        expect(movementWon.equals(sumMoney(amounts.map(parseMoney)))).toBe(true);
        const expectedMicroWon = amounts.reduce((total, amount) => total + microWonOf(amount), 0n);
        expect(microWonOf(movementWon.toFixed(6))).toBe(expectedMicroWon);
      }),
      { numRuns: 200 },
    );
  });

  it("never charges less for more tokens of any kind", () => {
    const deltasArbitrary = fc.record({
      uncached: tokenCount(eachTokensMax / 4n),
      cached: tokenCount(eachTokensMax / 4n),
      output: tokenCount(eachTokensMax / 4n),
    });
    fc.assert(
      fc.property(
        tokensUpTo(eachTokensMax / 2n),
        deltasArbitrary,
        termsArbitrary,
        (tokens, deltas, terms) => {
          // given a request and the same request with extra uncached, cached and output tokens
          const more: TokenCounts = {
            inputTokens: tokens.inputTokens + deltas.uncached + deltas.cached,
            cachedInputTokens: tokens.cachedInputTokens + deltas.cached,
            outputTokens: tokens.outputTokens + deltas.output,
            reasoningTokens: tokens.reasoningTokens,
          };
          // when
          const fewer = parseMoney(calculateCharge({ tokens, ...terms }).amountWon);
          const larger = parseMoney(calculateCharge({ tokens: more, ...terms }).amountWon);
          // then
          expect(larger.gte(fewer)).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
  });

  it("does not depend on how much of the output was reasoning", () => {
    fc.assert(
      fc.property(tokensArbitrary, termsArbitrary, (tokens, terms) => {
        // given the same request reported with and without reasoning tokens
        const withoutReasoning = { ...tokens, reasoningTokens: 0 };
        // when / then
        expect(calculateCharge({ tokens, ...terms }).amountWon).toBe(
          calculateCharge({ tokens: withoutReasoning, ...terms }).amountWon,
        );
      }),
      { numRuns: 200 },
    );
  });
});
