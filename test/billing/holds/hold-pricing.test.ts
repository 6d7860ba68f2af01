import { describe, expect, it } from "vitest";
import { calculateCharge } from "../../../src/billing/charging/charge-calculation";
import { costWonOf } from "../../../src/billing/holds/hold-pricing";
import type { PricingInForce } from "../../../src/billing/read-models/pricing-read-model";
import { parseMoney } from "../../../src/kernel/money";

function pricing(terms: { outputPrice?: string; fxRate?: string; discount?: string } = {}): PricingInForce {
  return {
    unitPrices: {
      inputUsdPerMillionTokens: parseMoney("1.25"),
      cachedInputUsdPerMillionTokens: parseMoney("0.125"),
      outputUsdPerMillionTokens: parseMoney(terms.outputPrice ?? "10"),
    },
    priceSource: "ledger",
    fxRate: {
      rateKrwPerUsd: parseMoney(terms.fxRate ?? "1385.2"),
      rateDate: "2026-11-27",
      appliesOn: "2026-11-28",
    },
    discount: { rate: parseMoney(terms.discount ?? "0.15"), level: "global" },
  };
}

const tokens = { input: 1_234, cached: 200, output: 567, reasoning: 100 };

describe("the request path's cost of tokens (costWonOf)", () => {
  it("given acceptable terms, then each call is calculateCharge's amountWon for its tokens", () => {
    // given one pricing that prices many requests
    const terms = pricing();
    for (const output of [0, 1, 567, 1_000_000]) {
      // when
      const costWon = costWonOf(terms, { ...tokens, output, reasoning: 0 });
      // then
      const { amountWon } = calculateCharge({
        tokens: { inputTokens: 1_234, cachedInputTokens: 200, outputTokens: output, reasoningTokens: 0 },
        unitPrices: terms.unitPrices,
        fxRate: terms.fxRate,
        discountRate: terms.discount.rate,
      });
      expect(costWon).toBe(amountWon);
    }
  });

  it.each([
    ["a negative price", { outputPrice: "-1" }],
    ["an FX rate of zero", { fxRate: "0" }],
    ["a discount above 1", { discount: "1.01" }],
  ])("given %s, then every call refuses it, not only the first", (_name, terms) => {
    // given
    const unacceptable = pricing(terms);
    // when / then
    expect(() => costWonOf(unacceptable, tokens)).toThrow(RangeError);
    expect(() => costWonOf(unacceptable, tokens)).toThrow(RangeError);
  });

  it("given terms already used, then unacceptable token counts are still refused", () => {
    // given terms asserted by an earlier call
    const terms = pricing();
    costWonOf(terms, tokens);
    // when / then
    expect(() => costWonOf(terms, { ...tokens, output: -1 })).toThrow(RangeError);
    expect(() => costWonOf(terms, { ...tokens, cached: tokens.input + 1 })).toThrow(RangeError);
    expect(() => costWonOf(terms, { ...tokens, reasoning: tokens.output + 1 })).toThrow(RangeError);
  });
});
