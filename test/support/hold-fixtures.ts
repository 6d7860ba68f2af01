import type { HoldRequest } from "../../src/billing/holds/generation-holds";
import type { PricingInForce } from "../../src/billing/read-models/pricing-read-model";
import { Money } from "../../src/kernel/money";

/**
 * A JSON chat completion of alpha-5.4-mini on a user's key, as the gateway asks for its hold: the account is
 * named after the request (`req_<name>` → user `<name>`); `overrides` say what else differs.
 */
export function holdRequestOf(requestId: string, overrides: Partial<HoldRequest> = {}): HoldRequest {
  const user = requestId.replace(/^req_/, "");
  return {
    requestId,
    keyId: "6f1c2a4e-8d3b-4f5a-9c7e-1b2d3e4f5a6b",
    account: { kind: "user", id: user },
    userId: user,
    organizationId: null,
    discountOrganizationId: null,
    availableWon: "100",
    model: "alpha-5.4-mini",
    fallbackModels: [],
    keyHasLimits: false,
    endpoint: "chat.completions",
    streamed: false,
    startedAt: new Date("2026-03-02T01:00:00.000Z"),
    bodyBytes: 4_000,
    maxOutputTokens: 1_000,
    ...overrides,
  };
}

/** $1 per million input and output tokens (cached input free), ₩1,400 per dollar, no discount. */
export const dollarPerMillionPricing: PricingInForce = {
  unitPrices: {
    inputUsdPerMillionTokens: new Money(1),
    cachedInputUsdPerMillionTokens: new Money(0),
    outputUsdPerMillionTokens: new Money(1),
  },
  priceSource: "ledger",
  fxRate: { rateKrwPerUsd: new Money(1_400), rateDate: "2026-02-27", appliesOn: "2026-03-02" },
  discount: { rate: new Money(0), level: "global" },
};
