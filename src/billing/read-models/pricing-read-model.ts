import type pg from "pg";
import { discountsTable } from "../../../projections/discounts";
import { fxRatesTable } from "../../../projections/fx-rates";
import { pricesTable } from "../../../projections/prices";
import { assert } from "../../kernel/assert";
import { billingLimits } from "../../kernel/limits";
import { parseMoney } from "../../kernel/money";
import { type IsoDate, seoulDateOf } from "../../kernel/seoul-calendar";
import { findModel } from "../../providers/catalog";
import { chargeBreakdownsInDatabase } from "../charging/charge-breakdowns-in-database";
import type { ChargeBreakdown, ChargeInput, FxRateInForce, UnitPrices } from "../charging/charge-calculation";
import { type DiscountRule, type DiscountSelection, selectDiscount } from "../charging/discount-rules";

/**
 * The price, discount and FX rate in force when a request started (C7), read from the prices, discounts
 * and FX-rates projections. The reconciler prices through this one module, and the admin's account view
 * finds in it the pending usage the reconciler cannot price (unpriceable-pending-charges.ts); the charge is
 * priced in SQL by `chargeBreakdowns`, which test/ledger/charge-breakdown-sql.property.test.ts holds equal to
 * `calculateCharge`.
 *
 * - Price: the last `ModelPriceSet` of the model effective at or before the start; none → the catalog
 *   default (seeding records the defaults at first start, so this only covers the instants before it).
 * - Discount: per (model or any, organization or any) the last rule effective at or before the start,
 *   none where that latest change removed the scope's rule; the most specific applicable one wins
 *   (`selectDiscount`).
 * - FX: D = the Seoul date of the start; among the rates recorded at or before the start, the one with the
 *   latest `appliesOn` ≤ D, and among those the latest recorded. Its rate date is what the charge records.
 *
 * "Last" is the latest effective, and of two changes made in one millisecond the later in the log: a model's
 * prices, a scope's discounts and a day's FX rates are each one stream, whose version orders them (a row an
 * earlier release folded has none; event id then: a fixed order is better than an arbitrary one).
 */

export interface PricingRequest {
  model: string;
  /** The organization of an organization key; null for a personal key (C7: personal keys match only "any"). */
  organizationId: string | null;
  startedAt: Date;
}

/** Read once and kept: a gateway prices many requests with one (hold-pricing.ts asserts its terms once). */
export interface PricingInForce {
  readonly unitPrices: Readonly<UnitPrices>;
  readonly priceSource: "ledger" | "catalog-default";
  readonly fxRate: Readonly<FxRateInForce & { appliesOn: IsoDate }>;
  readonly discount: Readonly<DiscountSelection>;
}

export interface PricingReadModel {
  /** One answer per request, in order. Throws `PricingUnavailableError` when one cannot be priced. */
  pricingAt(requests: readonly PricingRequest[]): Promise<PricingInForce[]>;
  /** One answer per request, in order: the pricing, or why that one request cannot be priced. */
  pricingEachAt(requests: readonly PricingRequest[]): Promise<(PricingInForce | PricingUnavailableError)[]>;
}

/**
 * What the reconciler reads to charge: the terms in force, and the charges themselves priced in the same
 * database, a batch per statement (../charging/charge-breakdowns-in-database.ts).
 */
export interface ChargePricingReadModel extends PricingReadModel {
  /** One breakdown per input, in order; each input already passed `assertChargeInput`. */
  chargeBreakdowns(inputs: readonly ChargeInput[]): Promise<ChargeBreakdown[]>;
}

/** Why a request cannot be priced: no price of its model at its start, or no FX rate recorded by then. */
export const pricingUnavailableReasons = ["unknown-model", "no-fx-rate"] as const;
export type PricingUnavailableReason = (typeof pricingUnavailableReasons)[number];

/** A request that cannot be priced: a data problem an operator must fix; the charge stays pending. */
export class PricingUnavailableError extends Error {
  override readonly name = "PricingUnavailableError";
  constructor(
    readonly reason: PricingUnavailableReason,
    readonly request: PricingRequest,
  ) {
    super(
      reason === "unknown-model"
        ? `no price for model ${request.model}: not in the catalog and never set`
        : `no FX rate recorded on or before ${seoulDateOf(request.startedAt)} (Seoul) as of ${request.startedAt.toISOString()}`,
    );
  }
}

interface PricingRow {
  ordinal: number;
  input_usd_per_million_tokens: string | null;
  cached_input_usd_per_million_tokens: string | null;
  output_usd_per_million_tokens: string | null;
  rate_krw_per_usd: string | null;
  rate_date: string | null;
  applies_on: string | null;
  discount_rules: { model: string | null; organizationId: string | null; rate: string }[];
}

/**
 * The price and the FX rate in force at a request's start, as `price` and `fx`: two LATERAL joins on the rows
 * named `request` (each with `model`, `started_at` and its Seoul date `seoul_date`). Every pricing reads
 * them, so a usage is found unpriceable by the lookups that would price it.
 */
export function termsInForceJoins(request: string): string {
  return `
  LEFT JOIN LATERAL (
    SELECT input_usd_per_million_tokens, cached_input_usd_per_million_tokens, output_usd_per_million_tokens
    FROM ${pricesTable.name}
    WHERE model = ${request}.model AND effective_at <= ${request}.started_at
    ORDER BY effective_at DESC, stream_version DESC NULLS LAST, event_id DESC
    LIMIT 1
  ) price ON true
  LEFT JOIN LATERAL (
    SELECT rate_krw_per_usd, rate_date, applies_on
    FROM ${fxRatesTable.name}
    WHERE applies_on <= ${request}.seoul_date AND recorded_at <= ${request}.started_at
    ORDER BY applies_on DESC, recorded_at DESC, stream_version DESC NULLS LAST, event_id DESC
    LIMIT 1
  ) fx ON true`;
}

/** Whether `termsInForceJoins` found a price of the model in the ledger, and an FX rate: SQL of booleans. */
export const termsFoundSql = {
  price: `(price.input_usd_per_million_tokens IS NOT NULL AND price.cached_input_usd_per_million_tokens IS NOT NULL
           AND price.output_usd_per_million_tokens IS NOT NULL)`,
  fxRate: "(fx.rate_krw_per_usd IS NOT NULL AND fx.rate_date IS NOT NULL AND fx.applies_on IS NOT NULL)",
} as const;

/**
 * Why a request of `model` cannot be priced, given what the lookups found; null when it can. A model the
 * ledger has no price for at the start is priced at its catalog default, if the catalog lists it.
 */
export function pricingUnavailableReasonOf(
  model: string,
  found: { price: boolean; fxRate: boolean },
): PricingUnavailableReason | null {
  if (!found.price && findModel(model) === undefined) return "unknown-model";
  if (!found.fxRate) return "no-fx-rate";
  return null;
}

/** One round trip for a whole page of requests: each gets its price, FX rate and candidate discount rules. */
const pricingStatement = `
  WITH request AS (
    SELECT * FROM json_to_recordset($1::json)
      AS request(ordinal int, model text, organization_id text, started_at timestamptz, seoul_date date)
  )
  SELECT request.ordinal,
         price.input_usd_per_million_tokens::text AS input_usd_per_million_tokens,
         price.cached_input_usd_per_million_tokens::text AS cached_input_usd_per_million_tokens,
         price.output_usd_per_million_tokens::text AS output_usd_per_million_tokens,
         fx.rate_krw_per_usd::text AS rate_krw_per_usd,
         fx.rate_date::text AS rate_date,
         fx.applies_on::text AS applies_on,
         (SELECT coalesce(json_agg(json_build_object(
                    'model', rule.model, 'organizationId', rule.organization_id, 'rate', rule.rate::text)), '[]'::json)
          FROM (SELECT DISTINCT ON (discount.model, discount.organization_id)
                       discount.model, discount.organization_id, discount.rate
                FROM ${discountsTable.name} discount
                WHERE discount.effective_at <= request.started_at
                  AND (discount.model IS NULL OR discount.model = request.model)
                  AND (discount.organization_id IS NULL OR discount.organization_id = request.organization_id)
                ORDER BY discount.model, discount.organization_id, discount.effective_at DESC,
                         discount.stream_version DESC NULLS LAST, discount.event_id DESC
               ) rule
          WHERE rule.rate IS NOT NULL
         ) AS discount_rules
  FROM request
  ${termsInForceJoins("request")}
  ORDER BY request.ordinal`;

export function createPricingReadModel(database: Pick<pg.Pool, "query">): ChargePricingReadModel {
  const pricingEachAt = async (requests: readonly PricingRequest[]) => {
    if (requests.length > billingLimits.pricingRequestsPerQueryMax) {
      throw new RangeError(`at most ${billingLimits.pricingRequestsPerQueryMax} requests per pricing query`);
    }
    if (requests.length === 0) return [];
    const input = requests.map((request, ordinal) => ({
      ordinal,
      model: request.model,
      organization_id: request.organizationId,
      started_at: request.startedAt.toISOString(),
      seoul_date: seoulDateOf(request.startedAt),
    }));
    // Named: prepared once per connection, so the planner does not run for every charge.
    const result = await database.query<PricingRow>({
      name: "pricing-at",
      text: pricingStatement,
      values: [JSON.stringify(input)],
    });
    // Callers match answers to requests by place: a row missing or out of order would price one request
    // with another's prices.
    assert(
      result.rows.length === requests.length && result.rows.every((row, index) => row.ordinal === index),
      `the pricing query answered ${result.rows.length} rows out of order for ${requests.length} requests`,
    );
    return result.rows.map((row, index) => {
      try {
        return pricingOfRow(row, requests[index] as PricingRequest);
      } catch (error) {
        if (error instanceof PricingUnavailableError) return error;
        throw error;
      }
    });
  };
  return {
    pricingEachAt,
    chargeBreakdowns: (inputs) => chargeBreakdownsInDatabase(database, inputs),
    async pricingAt(requests) {
      return (await pricingEachAt(requests)).map((answer) => {
        if (answer instanceof PricingUnavailableError) throw answer;
        return answer;
      });
    },
  };
}

function pricingOfRow(row: PricingRow, request: PricingRequest): PricingInForce {
  const ledgerPrices = ledgerUnitPricesOf(row);
  const fxRate =
    row.rate_krw_per_usd === null || row.rate_date === null || row.applies_on === null
      ? undefined
      : {
          rateKrwPerUsd: parseMoney(row.rate_krw_per_usd),
          rateDate: row.rate_date,
          appliesOn: row.applies_on,
        };
  const unavailable = pricingUnavailableReasonOf(request.model, {
    price: ledgerPrices !== undefined,
    fxRate: fxRate !== undefined,
  });
  if (unavailable !== null) throw new PricingUnavailableError(unavailable, request);
  assert(fxRate !== undefined, `${request.model} found priceable without an FX rate`);
  const { unitPrices, priceSource } = ledgerPrices
    ? { unitPrices: ledgerPrices, priceSource: "ledger" as const }
    : { unitPrices: catalogUnitPricesOf(request.model), priceSource: "catalog-default" as const };
  const rules: DiscountRule[] = row.discount_rules.map((rule) => ({
    model: rule.model,
    organizationId: rule.organizationId,
    rate: parseMoney(rule.rate),
  }));
  return {
    unitPrices,
    priceSource,
    fxRate,
    discount: selectDiscount(rules, { model: request.model, organizationId: request.organizationId }),
  };
}

/** The model's price in the ledger at the request's start; undefined when none was set by then. */
function ledgerUnitPricesOf(row: PricingRow): UnitPrices | undefined {
  if (
    row.input_usd_per_million_tokens === null ||
    row.cached_input_usd_per_million_tokens === null ||
    row.output_usd_per_million_tokens === null
  )
    return undefined;
  return {
    inputUsdPerMillionTokens: parseMoney(row.input_usd_per_million_tokens),
    cachedInputUsdPerMillionTokens: parseMoney(row.cached_input_usd_per_million_tokens),
    outputUsdPerMillionTokens: parseMoney(row.output_usd_per_million_tokens),
  };
}

function catalogUnitPricesOf(slug: string): UnitPrices {
  const model = findModel(slug);
  assert(model !== undefined, `model ${slug} priced at a catalog default the catalog does not have`);
  return {
    inputUsdPerMillionTokens: parseMoney(model.inputUsdPerMillionTokens),
    cachedInputUsdPerMillionTokens: parseMoney(model.cachedInputUsdPerMillionTokens),
    outputUsdPerMillionTokens: parseMoney(model.outputUsdPerMillionTokens),
  };
}
