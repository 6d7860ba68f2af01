import type pg from "pg";
import { assert } from "../../kernel/assert";
import { billingLimits } from "../../kernel/limits";
import { formatMoney } from "../../kernel/money";
import type { ChargeBreakdown, ChargeInput } from "./charge-calculation";

/**
 * Charges priced set-wise: one statement of `ledger_charge_breakdown`
 * (src/ledger/schema/charging/ledger-charge-breakdown.ts) per `pricingRequestsPerQueryMax` inputs, each
 * answered with the `ChargeBreakdown` that `calculateCharge` gives for it, text for text
 * (test/ledger/charge-breakdown-sql.property.test.ts). Callers check each input first with
 * `assertChargeInput`, so that one bad input fails alone instead of failing the statement for all: here a
 * refusal by the function is a programmer error.
 */

const chargeBreakdownsStatement = `
  SELECT charge.ordinal,
         ledger_charge_breakdown(
           charge.input_tokens, charge.cached_input_tokens, charge.output_tokens, charge.reasoning_tokens,
           charge.input_usd_per_million_tokens, charge.cached_input_usd_per_million_tokens,
           charge.output_usd_per_million_tokens, charge.fx_rate_krw_per_usd, charge.fx_rate_date,
           charge.discount_rate) AS breakdown
  FROM json_to_recordset($1::json) AS charge(
         ordinal int, input_tokens bigint, cached_input_tokens bigint, output_tokens bigint, reasoning_tokens bigint,
         input_usd_per_million_tokens numeric, cached_input_usd_per_million_tokens numeric,
         output_usd_per_million_tokens numeric, fx_rate_krw_per_usd numeric, fx_rate_date date, discount_rate numeric)
  ORDER BY charge.ordinal`;

/** Money travels as its decimal string, so NUMERIC receives it exactly. */
function chargeRowOf(input: ChargeInput, ordinal: number) {
  return {
    ordinal,
    input_tokens: input.tokens.inputTokens,
    cached_input_tokens: input.tokens.cachedInputTokens,
    output_tokens: input.tokens.outputTokens,
    reasoning_tokens: input.tokens.reasoningTokens,
    input_usd_per_million_tokens: formatMoney(input.unitPrices.inputUsdPerMillionTokens),
    cached_input_usd_per_million_tokens: formatMoney(input.unitPrices.cachedInputUsdPerMillionTokens),
    output_usd_per_million_tokens: formatMoney(input.unitPrices.outputUsdPerMillionTokens),
    fx_rate_krw_per_usd: formatMoney(input.fxRate.rateKrwPerUsd),
    fx_rate_date: input.fxRate.rateDate,
    discount_rate: formatMoney(input.discountRate),
  };
}

/** One breakdown per input, in order. */
export async function chargeBreakdownsInDatabase(
  database: Pick<pg.Pool, "query">,
  inputs: readonly ChargeInput[],
): Promise<ChargeBreakdown[]> {
  const breakdowns: ChargeBreakdown[] = [];
  for (let start = 0; start < inputs.length; start += billingLimits.pricingRequestsPerQueryMax) {
    const chunk = inputs.slice(start, start + billingLimits.pricingRequestsPerQueryMax);
    // Named: prepared once per connection.
    const result = await database.query<{ ordinal: number; breakdown: ChargeBreakdown }>({
      name: "charge-breakdowns",
      text: chargeBreakdownsStatement,
      values: [JSON.stringify(chunk.map(chargeRowOf))],
    });
    // Matched by place: a row missing or out of order would give one request another's charge.
    assert(
      result.rows.length === chunk.length && result.rows.every((row, index) => row.ordinal === index),
      `the charge breakdown query answered ${result.rows.length} rows out of order for ${chunk.length} inputs`,
    );
    breakdowns.push(...result.rows.map((row) => row.breakdown));
  }
  return breakdowns;
}
