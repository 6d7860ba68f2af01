import type pg from "pg";
import { formatMoney, parseMoney } from "../kernel/money";
import { seoulDateOf } from "../kernel/seoul-calendar";
import type { ApiKeyLimits } from "../ledger/events";

/**
 * Per-key limits (src/ledger/schema/holds/ledger-authorize-usage.ts enforces them when a hold is placed): how a
 * key's limits and spend are read back, from the inline tables the ledger's trigger keeps, so a limit just set
 * and a hold just granted are seen at once. The body that writes them is src/gateway/keys/key-limits-bodies.ts.
 */

/** A key's limits as the API reads and writes them: every field stated (the event's v1 had no models). */
export type KeyLimits = Required<{ [Field in keyof ApiKeyLimits]: NonNullable<ApiKeyLimits[Field]> | null }>;

export const noKeyLimits: KeyLimits = {
  monthlySpendLimitWon: null,
  totalSpendLimitWon: null,
  rateLimitRequestsPerMinute: null,
  allowedModels: null,
};

/** A key's spend as its limits count it: held + pending + charged. */
export interface ApiKeySpend {
  /** The Asia/Seoul calendar month "YYYY-MM" the month's figures are for. */
  month: string;
  monthWon: string;
  totalWon: string;
}

export interface ApiKeyLimitsView {
  limits: KeyLimits;
  spend: ApiKeySpend;
}

/** The limits and spend of each key asked for (keys never limited nor used: no limits, ₩0). */
export async function readKeyLimits(
  database: Pick<pg.Pool, "query">,
  keyIds: readonly string[],
  now: Date,
): Promise<Map<string, ApiKeyLimitsView>> {
  const month = seoulDateOf(now).slice(0, 7);
  const views = new Map<string, ApiKeyLimitsView>(
    keyIds.map((keyId) => [keyId, { limits: noKeyLimits, spend: { month, monthWon: "0", totalWon: "0" } }]),
  );
  if (keyIds.length === 0) return views;
  const result = await database.query<{
    key_id: string;
    monthly_spend_limit_won: string | null;
    total_spend_limit_won: string | null;
    rate_limit_requests_per_minute: number | null;
    allowed_models: string[] | null;
    month_won: string | null;
    total_won: string | null;
  }>(
    `SELECT wanted.key_id::text AS key_id,
            limits.monthly_spend_limit_won::text AS monthly_spend_limit_won,
            limits.total_spend_limit_won::text AS total_spend_limit_won,
            limits.rate_limit_requests_per_minute, limits.allowed_models,
            spent.month_won::text AS month_won, spent.total_won::text AS total_won
     FROM unnest($1::uuid[]) AS wanted(key_id)
     LEFT JOIN key_limits limits ON limits.key_id = wanted.key_id
     LEFT JOIN LATERAL (
       SELECT sum(spend.held_won + spend.pending_won + spend.charged_won)
                FILTER (WHERE spend.month = $2) AS month_won,
              sum(spend.held_won + spend.pending_won + spend.charged_won) AS total_won
       FROM key_spend spend WHERE spend.key_id = wanted.key_id
     ) spent ON true`,
    [keyIds, month],
  );
  const canonical = (text: string | null) => (text === null ? null : formatMoney(parseMoney(text)));
  for (const row of result.rows) {
    views.set(row.key_id, {
      limits: {
        monthlySpendLimitWon: canonical(row.monthly_spend_limit_won),
        totalSpendLimitWon: canonical(row.total_spend_limit_won),
        rateLimitRequestsPerMinute: row.rate_limit_requests_per_minute,
        allowedModels: row.allowed_models,
      },
      spend: {
        month,
        monthWon: canonical(row.month_won) ?? "0",
        totalWon: canonical(row.total_won) ?? "0",
      },
    });
  }
  return views;
}
