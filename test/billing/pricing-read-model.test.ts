import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  createPricingReadModel,
  type PricingReadModel,
} from "../../src/billing/read-models/pricing-read-model";
import { formatMoney } from "../../src/kernel/money";
import { type LedgerHarness, openLedgerHarness } from "../support/ledger-harness";
import { discountSet, fxRateUpdated, modelPriceSet } from "./billing-ledger-fixtures";

/**
 * What is in force at an instant (C7): each price, discount scope and FX day is replaced by a later record
 * only from the instant that record was made; requests are priced by their start.
 */

const t0 = "2026-11-20T00:00:00.000Z";
const t1 = "2026-11-20T01:00:00.000Z";
const t2 = "2026-11-20T02:00:00.000Z";
const t3 = "2026-11-20T03:00:00.000Z";

let harness: LedgerHarness;
let pricing: PricingReadModel;
let sequence = 0;

beforeEach(async () => {
  harness = await openLedgerHarness(`pricing_${sequence++}`);
  pricing = createPricingReadModel(harness.ledger.pool);
  await harness.append(
    modelPriceSet("alpha-5.4", { input: "1", cachedInput: "0.1", output: "8" }, t0),
    modelPriceSet("alpha-5.4", { input: "2", cachedInput: "0.2", output: "9" }, t2),
    discountSet("alpha-5.4", null, "0.05", t0),
    discountSet(null, "acme", "0.15", t0),
    // At t2 acme is exempted: a 0 rule at the organization level beats the model-level 5%.
    discountSet(null, "acme", "0", t2),
    fxRateUpdated(
      { appliesOn: "2026-11-20", rateDate: "2026-11-19", rateKrwPerUsd: "1480", source: "koreaexim" },
      t0,
    ),
    // The admin corrects the day's rate at t2.
    fxRateUpdated({ appliesOn: "2026-11-20", rateDate: "2026-11-19", rateKrwPerUsd: "1481.5" }, t2),
  );
  await harness.project();
});

afterEach(async () => {
  await harness.dispose();
});

describe("pricing read model", () => {
  it("prices each request of a batch, in order, with what was in force at its start", async () => {
    // When
    const [before, atChange, after, personal] = await pricing.pricingAt([
      { model: "alpha-5.4", organizationId: "acme", startedAt: new Date(t1) },
      { model: "alpha-5.4", organizationId: "acme", startedAt: new Date(t2) },
      { model: "alpha-5.4", organizationId: "acme", startedAt: new Date(t3) },
      { model: "alpha-5.4", organizationId: null, startedAt: new Date(t3) },
    ]);

    // Then
    expect(formatMoney(before!.unitPrices.inputUsdPerMillionTokens)).toBe("1");
    expect(before!.discount).toMatchObject({ level: "organization" });
    expect(formatMoney(before!.discount.rate)).toBe("0.15");
    expect(formatMoney(before!.fxRate.rateKrwPerUsd)).toBe("1480");

    // A record made at the very instant a request starts is in force for it.
    expect(formatMoney(atChange!.unitPrices.inputUsdPerMillionTokens)).toBe("2");
    expect(formatMoney(atChange!.fxRate.rateKrwPerUsd)).toBe("1481.5");

    expect(after!.priceSource).toBe("ledger");
    expect(after!.discount.level).toBe("organization");
    expect(formatMoney(after!.discount.rate)).toBe("0");

    expect(personal!.discount.level).toBe("model");
    expect(formatMoney(personal!.discount.rate)).toBe("0.05");
    expect(personal!.fxRate).toMatchObject({ rateDate: "2026-11-19", appliesOn: "2026-11-20" });
  });

  it("falls back to the catalog for a model never priced in the ledger", async () => {
    const [inForce] = await pricing.pricingAt([
      { model: "zeta-mini", organizationId: null, startedAt: new Date(t3) },
    ]);
    expect(inForce!.priceSource).toBe("catalog-default");
    expect(formatMoney(inForce!.unitPrices.cachedInputUsdPerMillionTokens)).toBe("0.0375");
  });
});
