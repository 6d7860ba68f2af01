import type pg from "pg";
import { keyNamesTable } from "../../../projections/key-lists";
import { organizationKeyIssuersTable } from "../../../projections/organization-members";
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
  /** The key's name, kept after it is deleted (a replaced playground key too); null if never issued. */
  keyName: string | null;
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
  /** Only the organization keys this user issued (a member's own usage, C14). */
  issuedByUserId?: string,
): Promise<UsageDayRow[]> {
  const result = await database.query<{
    day: string;
    model: string;
    key_id: string;
    key_name: string | null;
    requests: string;
    amount_won: string;
    input_tokens: string;
    cached_tokens: string;
    output_tokens: string;
    reasoning_tokens: string;
  }>(
    `SELECT usage.day::text AS day, usage.model, usage.key_id, named.name AS key_name,
            usage.requests::text AS requests, usage.amount_won,
            usage.input_tokens::text AS input_tokens, usage.cached_tokens::text AS cached_tokens,
            usage.output_tokens::text AS output_tokens, usage.reasoning_tokens::text AS reasoning_tokens
       FROM ${usageByDayTable.name} usage
       LEFT JOIN ${keyNamesTable.name} named ON named.key_id = usage.key_id
      WHERE usage.account_kind = $1 AND usage.account_id = $2
        AND ($3::date IS NULL OR usage.day >= $3::date) AND ($4::date IS NULL OR usage.day <= $4::date)
        AND ($5::text IS NULL OR usage.key_id::text IN (
              SELECT issued.key_id FROM ${organizationKeyIssuersTable.name} issued
              WHERE issued.organization_id = $2 AND issued.issued_by_user_id = $5))
      ORDER BY usage.day, usage.model, usage.key_id
      LIMIT ${readLimits.usageByDayRowsMax + 1}`,
    [account.kind, account.id, range.from ?? null, range.to ?? null, issuedByUserId ?? null],
  );
  return result.rows.map((row) => ({
    day: row.day,
    model: row.model,
    keyId: row.key_id,
    keyName: row.key_name,
    requests: Number(row.requests),
    amountWon: canonicalMoney(row.amount_won),
    inputTokens: Number(row.input_tokens),
    cachedTokens: Number(row.cached_tokens),
    outputTokens: Number(row.output_tokens),
    reasoningTokens: Number(row.reasoning_tokens),
  }));
}
