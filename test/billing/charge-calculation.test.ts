import { describe, expect, it } from "vitest";
import {
  type ChargeInput,
  calculateCharge,
  chargeInputOfBreakdown,
} from "../../src/billing/charging/charge-calculation";
import { parseMoney } from "../../src/kernel/money";

interface Case {
  inputTokens: number;
  cachedInputTokens: number;
  outputTokens: number;
  reasoningTokens: number;
  inputPrice: string;
  cachedPrice: string;
  outputPrice: string;
  fxRate: string;
  discount: string;
}

function chargeInput(given: Case): ChargeInput {
  return {
    tokens: {
      inputTokens: given.inputTokens,
      cachedInputTokens: given.cachedInputTokens,
      outputTokens: given.outputTokens,
      reasoningTokens: given.reasoningTokens,
    },
    unitPrices: {
      inputUsdPerMillionTokens: parseMoney(given.inputPrice),
      cachedInputUsdPerMillionTokens: parseMoney(given.cachedPrice),
      outputUsdPerMillionTokens: parseMoney(given.outputPrice),
    },
    fxRate: { rateKrwPerUsd: parseMoney(given.fxRate), rateDate: "2026-03-03" },
    discountRate: parseMoney(given.discount),
  };
}

const typicalRequest: Case = {
  inputTokens: 1_000,
  cachedInputTokens: 0,
  outputTokens: 500,
  reasoningTokens: 0,
  inputPrice: "2.5",
  cachedPrice: "1.25",
  outputPrice: "10",
  fxRate: "1483.4",
  discount: "0",
};

describe("calculateCharge (C7 formula, hand-computed)", () => {
  it("charges input and output with no cache", () => {
    // given 1,000 input and 500 output tokens at $2.5 / $10 per 1M, ₩1483.4 per USD, no discount
    // when
    const breakdown = calculateCharge(chargeInput(typicalRequest));
    // then usd = (1000 × 2.5 + 500 × 10) / 1e6 = 7500 / 1e6 = 0.0075
    //      won = 0.0075 × 1483.4 = 11.1255
    expect(breakdown.amountUsd).toBe("0.0075");
    expect(breakdown.amountWon).toBe("11.125500");
  });

  it("prices cached input at the cached price and does not add reasoning on top of output", () => {
    // given 10,000 input of which 4,000 cached, 2,000 output of which 500 reasoning; $3 / $0.3 / $15; ₩1400
    const given = {
      ...typicalRequest,
      inputTokens: 10_000,
      cachedInputTokens: 4_000,
      outputTokens: 2_000,
      reasoningTokens: 500,
      inputPrice: "3",
      cachedPrice: "0.3",
      outputPrice: "15",
      fxRate: "1400",
    };
    // when
    const breakdown = calculateCharge(chargeInput(given));
    // then usd = (6000 × 3 + 4000 × 0.3 + 2000 × 15) / 1e6 = (18000 + 1200 + 30000) / 1e6 = 0.0492
    //      won = 0.0492 × 1400 = 68.88   (adding reasoning again would give 79.38)
    expect(breakdown.amountUsd).toBe("0.0492");
    expect(breakdown.amountWon).toBe("68.880000");
  });

  it("applies the discount after conversion", () => {
    // given the typical request with a 15% discount
    // when
    const breakdown = calculateCharge(chargeInput({ ...typicalRequest, discount: "0.15" }));
    // then won = 0.0075 × 1483.4 × (1 − 0.15) = 11.1255 × 0.85 = 9.456675
    expect(breakdown.amountWon).toBe("9.456675");
  });

  it("rounds exactly half a micro-won up, once, at the end", () => {
    // given 3 input tokens at $1.5 per 1M and ₩1001 per USD
    const given = { ...typicalRequest, inputTokens: 3, outputTokens: 0, inputPrice: "1.5", fxRate: "1001" };
    // when
    const breakdown = calculateCharge(chargeInput(given));
    // then usd = 3 × 1.5 / 1e6 = 0.0000045 (kept unrounded)
    //      won = 0.0000045 × 1001 = 0.0045045 → half-up to 6 places: 0.004505
    //      (half-even would give 0.004504; rounding usd first would give 0.000005 × 1001 = 0.005005)
    expect(breakdown.amountUsd).toBe("0.0000045");
    expect(breakdown.amountWon).toBe("0.004505");
  });

  it("rounds just below half a micro-won down", () => {
    // given the same tokens at ₩1000.9999 per USD
    const given = {
      ...typicalRequest,
      inputTokens: 3,
      outputTokens: 0,
      inputPrice: "1.5",
      fxRate: "1000.9999",
    };
    // when
    const breakdown = calculateCharge(chargeInput(given));
    // then won = 0.0000045 × 1000.9999 = 0.00450449955 → 0.004504
    expect(breakdown.amountWon).toBe("0.004504");
  });

  it("stays exact for large token counts", () => {
    // given 2e9 input (5e8 cached), 1e9 output (4e8 reasoning); $2.5 / $0.625 / $10; ₩1483.4; 20% off
    const given = {
      inputTokens: 2_000_000_000,
      cachedInputTokens: 500_000_000,
      outputTokens: 1_000_000_000,
      reasoningTokens: 400_000_000,
      inputPrice: "2.5",
      cachedPrice: "0.625",
      outputPrice: "10",
      fxRate: "1483.4",
      discount: "0.2",
    };
    // when
    const breakdown = calculateCharge(chargeInput(given));
    // then usd = (1.5e9 × 2.5 + 5e8 × 0.625 + 1e9 × 10) / 1e6 = (3.75e9 + 3.125e8 + 1e10) / 1e6 = 14062.5
    //      won = 14062.5 × 1483.4 × 0.8 = 20860312.5 × 0.8 = 16688250
    expect(breakdown.amountUsd).toBe("14062.5");
    expect(breakdown.amountWon).toBe("16688250.000000");
  });

  it("charges nothing for zero tokens", () => {
    // given no tokens at all
    const given = { ...typicalRequest, inputTokens: 0, outputTokens: 0 };
    // when
    const breakdown = calculateCharge(chargeInput(given));
    // then
    expect(breakdown.amountUsd).toBe("0");
    expect(breakdown.amountWon).toBe("0.000000");
  });

  it("records everything needed to recompute the charge", () => {
    // given the cached-input request with a discount
    const given = {
      ...typicalRequest,
      inputTokens: 10_000,
      cachedInputTokens: 4_000,
      reasoningTokens: 100,
      discount: "0.15",
    };
    // when
    const breakdown = calculateCharge(chargeInput(given));
    // then
    expect(breakdown).toEqual({
      inputTokens: 10_000,
      cachedInputTokens: 4_000,
      outputTokens: 500,
      reasoningTokens: 100,
      inputUsdPerMillionTokens: "2.5",
      cachedInputUsdPerMillionTokens: "1.25",
      outputUsdPerMillionTokens: "10",
      fxRateKrwPerUsd: "1483.4",
      fxRateDate: "2026-03-03",
      discountRate: "0.15",
      // usd = (6000 × 2.5 + 4000 × 1.25 + 500 × 10) / 1e6 = (15000 + 5000 + 5000) / 1e6 = 0.025
      amountUsd: "0.025",
      // won = 0.025 × 1483.4 × 0.85 = 37.085 × 0.85 = 31.52225
      amountWon: "31.522250",
    });
    expect(calculateCharge(chargeInputOfBreakdown(breakdown))).toEqual(breakdown);
  });
});

describe("calculateCharge rejects inputs that break C7's invariants", () => {
  const rejected: Array<[string, Partial<Case>]> = [
    ["cached input above input", { inputTokens: 10, cachedInputTokens: 11 }],
    ["reasoning above output", { outputTokens: 10, reasoningTokens: 11 }],
    ["a fractional token count", { inputTokens: 1.5 }],
    ["a negative token count", { outputTokens: -1 }],
    ["a token count beyond the per-request limit", { outputTokens: 1_000_000_000_001 }],
    ["a discount above 1", { discount: "1.01" }],
    ["a negative discount", { discount: "-0.1" }],
    ["a negative price", { outputPrice: "-1" }],
    ["a price with more than 10 decimal places", { inputPrice: "0.00000000001" }],
    ["an FX rate of zero", { fxRate: "0" }],
  ];

  it.each(rejected)("rejects %s", (_name, override) => {
    // given an input with one invariant broken
    const input = chargeInput({ ...typicalRequest, ...override });
    // when / then
    expect(() => calculateCharge(input)).toThrow(RangeError);
  });

  it("rejects a rate date that is not a calendar date", () => {
    // given
    const input = chargeInput(typicalRequest);
    input.fxRate.rateDate = "2026-02-30";
    // when / then
    expect(() => calculateCharge(input)).toThrow(RangeError);
  });

  it("accepts a discount of exactly 1 and charges nothing", () => {
    // given a 100% discount
    // when
    const breakdown = calculateCharge(chargeInput({ ...typicalRequest, discount: "1" }));
    // then
    expect(breakdown.amountWon).toBe("0.000000");
  });
});
