import type { DeclaredFunction } from "../../../database/declared-schema";
import { chargeLimits } from "../../../kernel/limits";

/**
 * The C7 charge of one request, priced in the database: exactly what `calculateCharge`
 * (src/billing/charging/charge-calculation.ts) returns, as a JSON object of the same `ChargeBreakdown` shape
 * and the same text, so that a batch of usages is priced in one statement and the event records the same
 * strings whichever side priced it (test/ledger/charge-breakdown-sql.property.test.ts holds the two equal).
 *
 *   usd = ((input − cached) × inputPrice + cached × cachedPrice + output × outputPrice) / 1,000,000
 *   won = usd × fxRate × (1 − discount), rounded once, half-up, to 6 places
 *
 * - Exact: NUMERIC multiplication and addition keep every digit; dividing by 1,000,000 is done as a
 *   multiplication by 0.000001 (a shift of scale), because NUMERIC division rounds to a scale it chooses.
 * - `round(…, 6)` rounds a tie away from zero: that is half-up here, where the amount is never negative
 *   (every input is asserted non-negative and the discount at most 1), and it is also what decimal.js's
 *   ROUND_HALF_UP does.
 * - Text as src/kernel/money.ts writes it: `formatMoney` (plain, no trailing zeros, zero as "0") is
 *   `trim_scale(x)::text`; `formatMoneyFixed(x, 6)` of the rounded won is the text of `round(x, 6)`, whose
 *   scale is always 6.
 * - Inputs outside `chargeLimits` (the same bounds as charge-limits.ts, so the bounds that keep the
 *   TypeScript exact keep this equal to it), cached above input, reasoning above output or a NULL raise
 *   `numeric_value_out_of_range`: a charge never goes out priced from data the TypeScript would refuse.
 *
 * Reasoning tokens are inside output tokens (C7): they are checked and returned, never priced again.
 */
const tokensMax = chargeLimits.tokensPerRequestMax;
const unitPriceBelow = chargeLimits.unitPriceUsdPerMillionTokensBelow;
const fxRateBelow = chargeLimits.fxRateKrwPerUsdBelow;
const decimalPlacesMax = chargeLimits.decimalPlacesMax;

export const ledgerChargeBreakdownFunction: DeclaredFunction = {
  kind: "function",
  name: "ledger_charge_breakdown",
  sql: `
    CREATE OR REPLACE FUNCTION ledger_charge_breakdown(
      input_tokens bigint, cached_input_tokens bigint, output_tokens bigint, reasoning_tokens bigint,
      input_usd_per_million_tokens numeric, cached_input_usd_per_million_tokens numeric,
      output_usd_per_million_tokens numeric, fx_rate_krw_per_usd numeric, fx_rate_date date, discount_rate numeric)
    RETURNS json LANGUAGE plpgsql STABLE AS $$
    DECLARE
      amount_usd numeric;
      amount_won numeric;
    BEGIN
      -- IS NOT TRUE, so that a NULL anywhere is refused too.
      IF (input_tokens BETWEEN 0 AND ${tokensMax} AND cached_input_tokens BETWEEN 0 AND ${tokensMax}
          AND output_tokens BETWEEN 0 AND ${tokensMax} AND reasoning_tokens BETWEEN 0 AND ${tokensMax}) IS NOT TRUE
      THEN
        RAISE EXCEPTION 'token counts are not acceptable: % % % %',
          input_tokens, cached_input_tokens, output_tokens, reasoning_tokens USING ERRCODE = 'numeric_value_out_of_range';
      END IF;
      IF (cached_input_tokens <= input_tokens AND reasoning_tokens <= output_tokens) IS NOT TRUE THEN
        RAISE EXCEPTION 'input must include cached input and output reasoning (C7): % % % %',
          input_tokens, cached_input_tokens, output_tokens, reasoning_tokens USING ERRCODE = 'numeric_value_out_of_range';
      END IF;
      IF (input_usd_per_million_tokens >= 0 AND input_usd_per_million_tokens < ${unitPriceBelow}
          AND min_scale(input_usd_per_million_tokens) <= ${decimalPlacesMax}
          AND cached_input_usd_per_million_tokens >= 0 AND cached_input_usd_per_million_tokens < ${unitPriceBelow}
          AND min_scale(cached_input_usd_per_million_tokens) <= ${decimalPlacesMax}
          AND output_usd_per_million_tokens >= 0 AND output_usd_per_million_tokens < ${unitPriceBelow}
          AND min_scale(output_usd_per_million_tokens) <= ${decimalPlacesMax}) IS NOT TRUE
      THEN
        RAISE EXCEPTION 'unit prices are not acceptable: % % %', input_usd_per_million_tokens,
          cached_input_usd_per_million_tokens, output_usd_per_million_tokens USING ERRCODE = 'numeric_value_out_of_range';
      END IF;
      IF (fx_rate_krw_per_usd > 0 AND fx_rate_krw_per_usd < ${fxRateBelow}
          AND min_scale(fx_rate_krw_per_usd) <= ${decimalPlacesMax} AND fx_rate_date IS NOT NULL
          AND discount_rate BETWEEN 0 AND 1 AND min_scale(discount_rate) <= ${decimalPlacesMax}) IS NOT TRUE
      THEN
        RAISE EXCEPTION 'fx rate % of % or discount rate % is not acceptable', fx_rate_krw_per_usd, fx_rate_date,
          discount_rate USING ERRCODE = 'numeric_value_out_of_range';
      END IF;

      amount_usd := ((input_tokens - cached_input_tokens) * input_usd_per_million_tokens
                     + cached_input_tokens * cached_input_usd_per_million_tokens
                     + output_tokens * output_usd_per_million_tokens) * 0.000001;
      amount_won := round(amount_usd * fx_rate_krw_per_usd * (1 - discount_rate), 6);

      RETURN json_build_object(
        'inputTokens', input_tokens,
        'cachedInputTokens', cached_input_tokens,
        'outputTokens', output_tokens,
        'reasoningTokens', reasoning_tokens,
        'inputUsdPerMillionTokens', trim_scale(input_usd_per_million_tokens)::text,
        'cachedInputUsdPerMillionTokens', trim_scale(cached_input_usd_per_million_tokens)::text,
        'outputUsdPerMillionTokens', trim_scale(output_usd_per_million_tokens)::text,
        'fxRateKrwPerUsd', trim_scale(fx_rate_krw_per_usd)::text,
        'fxRateDate', to_char(fx_rate_date::timestamp, 'YYYY-MM-DD'),
        'discountRate', trim_scale(discount_rate)::text,
        'amountUsd', trim_scale(amount_usd)::text,
        'amountWon', amount_won::text);
    END;
    $$;
  `,
};
