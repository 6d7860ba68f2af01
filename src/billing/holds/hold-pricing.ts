import { assert } from "../../kernel/assert";
import { seoulDateOf } from "../../kernel/seoul-calendar";
import type { UsageTokens } from "../../ledger/events";
import { assertChargeTerms, chargeWonOf } from "../charging/charge-calculation";
import { tokenCountsForPricing } from "../charging/recorded-charge-breakdown";
import type { PricingInForce, PricingReadModel } from "../read-models/pricing-read-model";

/**
 * The price, FX rate and discount a gateway process prices holds and pending costs with, kept in memory per
 * (model, organization, Seoul date) so that a request costs no pricing query. An entry older than `ttlMs`
 * is still used while a fresh one loads in the background: a price change reaches holds within about
 * `ttlMs`, and the charge itself is always priced by the reconciler from the ledger (C7).
 */

interface Entry {
  pricing: PricingInForce | undefined;
  loading: Promise<PricingInForce> | undefined;
  loadedAtMs: number;
}

export interface HoldPricingOptions {
  read: PricingReadModel;
  ttlMs: number;
  entriesMax: number;
  nowMs?: () => number;
}

export class HoldPricing {
  private readonly entries = new Map<string, Entry>();
  private readonly nowMs: () => number;

  constructor(private readonly options: HoldPricingOptions) {
    this.nowMs = options.nowMs ?? Date.now;
  }

  /** What is in memory now, without waiting (a stale entry is refreshed in the background). */
  peek(model: string, organizationId: string | null, startedAt: Date): PricingInForce | undefined {
    const entry = this.entries.get(keyOf(model, organizationId, startedAt));
    if (entry && this.nowMs() - entry.loadedAtMs > this.options.ttlMs) {
      this.load(model, organizationId, startedAt).catch(() => {});
    }
    return entry?.pricing;
  }

  async pricingFor(model: string, organizationId: string | null, startedAt: Date): Promise<PricingInForce> {
    return this.peek(model, organizationId, startedAt) ?? this.load(model, organizationId, startedAt);
  }

  private load(model: string, organizationId: string | null, startedAt: Date): Promise<PricingInForce> {
    const key = keyOf(model, organizationId, startedAt);
    const entry = this.entries.get(key);
    if (entry?.loading) return entry.loading;
    if (!entry && this.entries.size >= this.options.entriesMax) this.entries.clear();
    const loading = this.options.read
      .pricingAt([{ model, organizationId, startedAt }])
      .then(([pricing]) => {
        assert(pricing, `the pricing read model answered nothing for ${model}`);
        this.entries.set(key, { pricing, loading: undefined, loadedAtMs: this.nowMs() });
        return pricing;
      })
      .finally(() => {
        const current = this.entries.get(key);
        if (current?.loading === loading) current.loading = undefined;
      });
    this.entries.set(key, { pricing: entry?.pricing, loading, loadedAtMs: entry?.loadedAtMs ?? 0 });
    return loading;
  }
}

function keyOf(model: string, organizationId: string | null, startedAt: Date): string {
  return `${model}\u0000${organizationId ?? ""}\u0000${seoulDateOf(startedAt)}`;
}

/** Pricings whose terms were asserted chargeable: a pricing is read once and prices many requests. */
const chargeableTerms = new WeakSet<PricingInForce>();

/** The exact C7 amount of these tokens under this pricing, as the reconciler will compute it. */
export function costWonOf(pricing: PricingInForce, tokens: UsageTokens): string {
  const input = {
    tokens: tokenCountsForPricing(tokens),
    unitPrices: pricing.unitPrices,
    fxRate: pricing.fxRate,
    discountRate: pricing.discount.rate,
  };
  if (!chargeableTerms.has(pricing)) {
    assertChargeTerms(input);
    chargeableTerms.add(pricing);
  }
  return chargeWonOf(input);
}
