import { formatMoney, type Money, roundChargeWon } from "../../kernel/money";
import { seoulDateOf } from "../../kernel/seoul-calendar";
import { listModels } from "../../providers/catalog";
import { type PricingInForce, type PricingReadModel, PricingUnavailableError } from "./pricing-read-model";

/**
 * What each served model costs the caller today, in won per million tokens: the price in force (USD), at
 * today's FX rate (C7), less the caller's discount (organization keys: their organization's rules; personal
 * keys: the rules for any organization). Rounded as a charge is, half-up to micro-won; a charge itself is
 * always computed from token counts, never from these figures.
 *
 * The list is read in one round trip for every model and kept per (organization, Seoul date) for `ttlMs`,
 * so listing models costs no query on most calls; a price change shows within `ttlMs`. Listing models
 * must work whatever the ledger does (clients call it as a health check): a model that cannot be priced
 * (no FX rate yet) has no pricing, and while the database is away the last list read is shown, or none.
 */

export interface ModelPricing {
  inputWonPerMillionTokens: string;
  cachedInputWonPerMillionTokens: string;
  outputWonPerMillionTokens: string;
  inputUsdPerMillionTokens: string;
  cachedInputUsdPerMillionTokens: string;
  outputUsdPerMillionTokens: string;
  fxRateKrwPerUsd: string;
  /** The bank business day the rate was published for. */
  fxRateDate: string;
  /** "0.15" is 15% off; "0" when no rule applies. */
  discountRate: string;
}

/** Pricing by model slug; a slug missing could not be priced. */
export type ModelPrices = ReadonlyMap<string, ModelPricing>;

interface Entry {
  prices: ModelPrices;
  loadedAtMs: number;
}

export class ModelPriceList {
  private readonly entries = new Map<string, Entry>();
  private readonly loading = new Map<string, Promise<ModelPrices>>();

  constructor(
    private readonly options: {
      read: PricingReadModel;
      ttlMs: number;
      /** Organizations remembered at once; past this the memory starts afresh. */
      entriesMax: number;
      /** Reading failed (the list answers without prices, or with the last ones read). */
      onError: (error: unknown) => void;
      now?: () => Date;
    },
  ) {}

  /** Every served model's pricing for the caller, by slug. Never throws. */
  async pricesFor(organizationId: string | null): Promise<ModelPrices> {
    const now = this.options.now?.() ?? new Date();
    const key = `${organizationId ?? ""}\u0000${seoulDateOf(now)}`;
    const entry = this.entries.get(key);
    if (entry && now.getTime() - entry.loadedAtMs <= this.options.ttlMs) return entry.prices;
    let loading = this.loading.get(key);
    if (!loading) {
      loading = this.load(organizationId, now)
        .catch((error: unknown) => {
          this.options.onError(error);
          return this.entries.get(key)?.prices ?? new Map<string, ModelPricing>();
        })
        .finally(() => this.loading.delete(key));
      this.loading.set(key, loading);
    }
    // A stale list waits for the fresh one (which falls back to it if reading fails): a price changed
    // shows within the list's ttl, as documented, however long the list went unasked.
    return loading;
  }

  private async load(organizationId: string | null, now: Date): Promise<ModelPrices> {
    const models = listModels();
    const pricings = await this.options.read.pricingEachAt(
      models.map((model) => ({ model: model.slug, organizationId, startedAt: now })),
    );
    const prices = new Map<string, ModelPricing>();
    models.forEach((model, index) => {
      const pricing = pricings[index];
      if (pricing !== undefined && !(pricing instanceof PricingUnavailableError))
        prices.set(model.slug, modelPricingOf(pricing));
    });
    if (this.entries.size >= this.options.entriesMax) this.entries.clear();
    this.entries.set(`${organizationId ?? ""}\u0000${seoulDateOf(now)}`, {
      prices,
      loadedAtMs: now.getTime(),
    });
    return prices;
  }
}

export function modelPricingOf(pricing: PricingInForce): ModelPricing {
  const { unitPrices, fxRate, discount } = pricing;
  const inWon = (usd: Money) =>
    formatMoney(roundChargeWon(usd.times(fxRate.rateKrwPerUsd).times(discount.rate.negated().plus(1))));
  return {
    inputWonPerMillionTokens: inWon(unitPrices.inputUsdPerMillionTokens),
    cachedInputWonPerMillionTokens: inWon(unitPrices.cachedInputUsdPerMillionTokens),
    outputWonPerMillionTokens: inWon(unitPrices.outputUsdPerMillionTokens),
    inputUsdPerMillionTokens: formatMoney(unitPrices.inputUsdPerMillionTokens),
    cachedInputUsdPerMillionTokens: formatMoney(unitPrices.cachedInputUsdPerMillionTokens),
    outputUsdPerMillionTokens: formatMoney(unitPrices.outputUsdPerMillionTokens),
    fxRateKrwPerUsd: formatMoney(fxRate.rateKrwPerUsd),
    fxRateDate: fxRate.rateDate,
    discountRate: formatMoney(discount.rate),
  };
}
