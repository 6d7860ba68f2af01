import { describe, expect, it } from "vitest";
import { discountsProjection } from "../../../projections/discounts";
import { fxRatesProjection } from "../../../projections/fx-rates";
import { pricesProjection } from "../../../projections/prices";
import { calculateCharge } from "../../../src/billing/charging/charge-calculation";
import { costWonOf, HoldPricing } from "../../../src/billing/holds/hold-pricing";
import type { PricingInForce, PricingReadModel } from "../../../src/billing/read-models/pricing-read-model";
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

describe("the pricing a gateway keeps in memory (HoldPricing)", () => {
  const startedAt = new Date("2026-11-28T03:00:00.000Z");
  const batch = {
    from: { commit: 1n, prepare: 1n },
    to: { commit: 2n, prepare: 2n },
    touched: new Set<string>(),
  };
  const position = (at: number) => ({ commit: BigInt(at), prepare: BigInt(at) });
  /** A runner's batch over (from, to] that changed no pricing, every pricing projection at its end. */
  const quietBatch = (from: number, to: number) => ({
    from: position(from),
    to: position(to),
    touched: new Set<string>(),
    pricingChanged: false,
    projections: [pricesProjection.name, discountsProjection.name, fxRatesProjection.name, "balances"],
  });

  /** A pricing read model answered by hand: each read waits for `answer` and returns what it is given. */
  function answeredByHand() {
    const waiting: ((pricing: PricingInForce) => void)[] = [];
    const read: PricingReadModel = {
      pricingAt: () => new Promise((resolve) => waiting.push((pricing) => resolve([pricing]))),
      pricingEachAt: () => Promise.reject(new Error("not read by HoldPricing")),
    };
    return {
      memory: new HoldPricing({ read, ttlMs: 60_000, entriesMax: 100 }),
      reads: () => waiting.length,
      answer: (index: number, pricing: PricingInForce) => waiting[index]!(pricing),
    };
  }

  /** Puts a pricing in memory: one read, answered, in a process that has heard the runner's batches to 1. */
  async function remembered(pricing: PricingInForce) {
    const model = answeredByHand();
    model.memory.checkpointsAdvanced(quietBatch(0, 1));
    const priced = model.memory.pricingFor("alpha-5.4", null, startedAt);
    model.answer(0, pricing);
    expect(await priced).toBe(pricing);
    expect(model.memory.peek("alpha-5.4", null, startedAt)).toBe(pricing);
    return model;
  }

  it("given a pricing in memory, then a batch that may have changed pricing, or says nothing of it, drops it", async () => {
    for (const change of [undefined, batch, { ...batch, pricingChanged: true }]) {
      // given
      const model = await remembered(pricing());
      // when
      model.memory.checkpointsAdvanced(change);
      // then: the next request reads again
      expect(model.memory.peek("alpha-5.4", null, startedAt)).toBeUndefined();
      expect(model.reads()).toBe(2);
    }
  });

  it("given a pricing in memory, then a batch that changed no pricing keeps it", async () => {
    const kept = pricing();
    const model = await remembered(kept);

    model.memory.checkpointsAdvanced({ ...batch, pricingChanged: false });

    expect(model.memory.peek("alpha-5.4", null, startedAt)).toBe(kept);
    expect(model.reads()).toBe(1);
  });

  it("given the batches heard in order up to a position, then a wait for it or before keeps the pricing, and a wait past it drops it", async () => {
    // given a pricing in memory, and batches heard through 30 (a charge batch's read-your-writes, in one
    // process, then waits for the pricing projections at a usage it recorded)
    const kept = pricing();
    const model = await remembered(kept);
    for (const [from, to] of [
      [1, 10],
      [10, 30],
    ] as const)
      model.memory.checkpointsAdvanced(quietBatch(from, to));
    // when / then
    for (const target of [30, 29, 10]) {
      await model.memory.catchUpTo(position(target));
      expect(model.memory.peek("alpha-5.4", null, startedAt)).toBe(kept);
    }
    expect(model.reads()).toBe(1);
    await model.memory.catchUpTo(position(31));
    expect(model.memory.peek("alpha-5.4", null, startedAt)).toBeUndefined();
    expect(model.reads()).toBe(2);
  });

  it("given a batch that does not follow on from the last one heard, then it drops the pricing though it changed none: what came between is unknown", async () => {
    const model = await remembered(pricing());
    model.memory.checkpointsAdvanced(quietBatch(1, 10));

    model.memory.checkpointsAdvanced(quietBatch(20, 30));

    expect(model.memory.peek("alpha-5.4", null, startedAt)).toBeUndefined();
    expect(model.reads()).toBe(2);
  });

  it("given a pricing read before any batch was heard, then the first batch heard drops it: what came before is unknown", async () => {
    const model = answeredByHand();
    const priced = model.memory.pricingFor("alpha-5.4", null, startedAt);
    model.answer(0, pricing());
    await priced;

    model.memory.checkpointsAdvanced(quietBatch(1, 10));

    expect(model.memory.peek("alpha-5.4", null, startedAt)).toBeUndefined();
  });

  it("given batches whose runner does not say the pricing projections stand at their end, then a wait for them drops the pricing", async () => {
    for (const projections of [undefined, ["balances"]]) {
      const model = await remembered(pricing());
      const { projections: _all, ...unnamed } = quietBatch(1, 10);
      model.memory.checkpointsAdvanced(projections ? { ...unnamed, projections } : unnamed);

      await model.memory.catchUpTo(position(10));

      expect(model.memory.peek("alpha-5.4", null, startedAt)).toBeUndefined();
    }
  });

  it("given a read begun before a change, then its answer serves its own request but is not kept", async () => {
    // given a read under way
    const model = answeredByHand();
    const before = model.memory.pricingFor("alpha-5.4", null, startedAt);
    // when a change is heard of before it answers
    model.memory.checkpointsAdvanced({ ...batch, pricingChanged: true });
    const old = pricing({ outputPrice: "10" });
    model.answer(0, old);
    // then its request has it, and the next one reads again
    expect(await before).toBe(old);
    const fresh = pricing({ outputPrice: "20" });
    const after = model.memory.pricingFor("alpha-5.4", null, startedAt);
    expect(model.reads()).toBe(2);
    model.answer(1, fresh);
    expect(await after).toBe(fresh);
  });
});
