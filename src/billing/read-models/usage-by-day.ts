import type pg from "pg";
import { usageByDayTable } from "../../../projections/usage-by-day";
import { readLimits } from "../../kernel/limits";
import { canonicalMoney } from "../../kernel/money";
import type { AccountReference } from "../../ledger/events";

/**
 * An account's charged usage per Seoul day × model × key, from the usage-by-day projection — never a scan
 * of the charges: what the console's usage charts read, whatever the number of charges behind them.
 */

export interface UsageDayRow {
  day: string;
  model: string;
  keyId: string;
  requests: number;
  amountWon: string;
  inputTokens: number;
  cachedTokens: number;
  outputTokens: number;
  reasoningTokens: number;
}

/** Rows of `[from, to]` (Seoul dates, both inclusive, either open), at most `readLimits.usageByDayRowsMax + 1`. */
export async function readUsageByDay(
  database: Pick<pg.Pool, "query">,
  account: AccountReference,
  range: { from: string | undefined; to: string | undefined },
): Promise<UsageDayRow[]> {
  const result = await database.query<{
    day: string;
    model: string;
    key_id: string;
    requests: string;
    amount_won: string;
    input_tokens: string;
    cached_tokens: string;
    output_tokens: string;
    reasoning_tokens: string;
  }>(
    `SELECT day::text AS day, model, key_id, requests::text AS requests, amount_won,
            input_tokens::text AS input_tokens, cached_tokens::text AS cached_tokens,
            output_tokens::text AS output_tokens, reasoning_tokens::text AS reasoning_tokens
       FROM ${usageByDayTable.name}
      WHERE account_kind = $1 AND account_id = $2
        AND ($3::date IS NULL OR day >= $3::date) AND ($4::date IS NULL OR day <= $4::date)
      ORDER BY day, model, key_id
      LIMIT ${readLimits.usageByDayRowsMax + 1}`,
    [account.kind, account.id, range.from ?? null, range.to ?? null],
  );
  return result.rows.map((row) => ({
    day: row.day,
    model: row.model,
    keyId: row.key_id,
    requests: Number(row.requests),
    amountWon: canonicalMoney(row.amount_won),
    inputTokens: Number(row.input_tokens),
    cachedTokens: Number(row.cached_tokens),
    outputTokens: Number(row.output_tokens),
    reasoningTokens: Number(row.reasoning_tokens),
  }));
}
