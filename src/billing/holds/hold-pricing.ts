import { discountsProjection } from "../../../projections/discounts";
import { fxRatesProjection } from "../../../projections/fx-rates";
import { pricesProjection } from "../../../projections/prices";
import { assert } from "../../kernel/assert";
import { seoulDateOf } from "../../kernel/seoul-calendar";
import type { UsageTokens } from "../../ledger/events";
import type { CheckpointChange } from "../../ledger/projection/checkpoint-notification";
import type { LocalReadModel } from "../../ledger/projection/projection-waiter";
import { isAtOrAfter, type LogPosition, logStart } from "../../ledger/store/log-position";
import { assertChargeTerms, chargeWonOf } from "../charging/charge-calculation";
import { tokenCountsForPricing } from "../charging/recorded-charge-breakdown";
import type { PricingInForce, PricingReadModel } from "../read-models/pricing-read-model";

/**
 * The price, FX rate and discount a gateway process prices holds and pending costs with, kept in memory per
 * (model, organization, Seoul date) so that a request costs no pricing query. A projection batch that
 * changed a price, a discount or an FX rate (its NOTIFY says so; a notification that does not say, a
 * reconnect, a batch that does not follow on from the last one heard) drops every entry, and a command of
 * this process that waits for a position not yet heard of drops them before it answers: the next request
 * reads the pricing in force. A wait for a position already heard of keeps them: in one process, each charge
 * batch waits for the pricing projections, and would otherwise empty the memory. An entry older than
 * `ttlMs` is never used (a lost notification). The charge itself is always priced by the reconciler from the
 * ledger (C7); priced the same way here, a request's hold covers what it will be charged and its pending cost
 * is its charge, but for a request that starts within the notification's way to this process after a change.
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

export class HoldPricing implements LocalReadModel {
  readonly projections = [pricesProjection.name, discountsProjection.name, fxRatesProjection.name];
  private readonly entries = new Map<string, Entry>();
  /** Moves whenever the entries are dropped, so that a read begun before is not kept after. */
  private generation = 0;
  /**
   * Every batch up to here was heard of, in order, with the pricing projections at its end, and each that
   * may have changed pricing dropped the entries: the entries are as new as the projections here.
   */
  private heardThrough: LogPosition = logStart;
  private readonly nowMs: () => number;

  constructor(private readonly options: HoldPricingOptions) {
    this.nowMs = options.nowMs ?? Date.now;
  }

  /** What is in memory now, without waiting; undefined (and a load begun) when nothing current is. */
  peek(model: string, organizationId: string | null, startedAt: Date): PricingInForce | undefined {
    const entry = this.entries.get(keyOf(model, organizationId, startedAt));
    if (entry?.pricing !== undefined && this.nowMs() - entry.loadedAtMs <= this.options.ttlMs)
      return entry.pricing;
    this.load(model, organizationId, startedAt).catch(() => {});
    return undefined;
  }

  async pricingFor(model: string, organizationId: string | null, startedAt: Date): Promise<PricingInForce> {
    return this.peek(model, organizationId, startedAt) ?? this.load(model, organizationId, startedAt);
  }

  checkpointsAdvanced(change?: CheckpointChange): void {
    // A batch beginning after the last one heard leaves a hole, which may hold a change.
    const follows = change !== undefined && isAtOrAfter(this.heardThrough, change.from);
    if (change?.pricingChanged !== false || !follows) this.dropAll();
    // After this batch's drop, if any, every read is at least as new as its end: heard through it.
    const pricingProjectionsAtEnd = this.projections.every((name) => change?.projections?.includes(name));
    if (change && pricingProjectionsAtEnd && !isAtOrAfter(this.heardThrough, change.to))
      this.heardThrough = change.to;
  }

  /**
   * A command of this process waits for `target` in the projections (a price, a discount or a rate it set,
   * a charge batch's read-your-writes): unless every batch up to it was heard of, forget.
   */
  async catchUpTo(target: LogPosition): Promise<void> {
    if (!isAtOrAfter(this.heardThrough, target)) this.dropAll();
  }

  private dropAll(): void {
    this.entries.clear();
    this.generation += 1;
  }

  private load(model: string, organizationId: string | null, startedAt: Date): Promise<PricingInForce> {
    const key = keyOf(model, organizationId, startedAt);
    const entry = this.entries.get(key);
    if (entry?.loading) return entry.loading;
    if (!entry && this.entries.size >= this.options.entriesMax) this.entries.clear();
    const generation = this.generation;
    const loading = this.options.read
      .pricingAt([{ model, organizationId, startedAt }])
      .then(([pricing]) => {
        assert(pricing, `the pricing read model answered nothing for ${model}`);
        // Read before a change this process has since heard of: good for this request, kept for none.
        if (generation === this.generation)
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
