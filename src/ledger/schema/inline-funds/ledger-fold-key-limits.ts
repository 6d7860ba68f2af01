import type { DeclaredFunction } from "../../../database/declared-schema";

/**
 * Each key's latest limits (key-limits.ts).
 *
 * A fold of the whole log, one query: ledger_recompute_funds writes it (rebuild), src/ledger/inline-funds.ts
 * compares it with the live rows (verify). PARALLEL SAFE (it only reads), so a fold of a long log may use
 * workers.
 */
export const ledgerFoldKeyLimitsFunction: DeclaredFunction = {
  kind: "function",
  name: "ledger_fold_key_limits",
  sql: `
    CREATE OR REPLACE FUNCTION ledger_fold_key_limits()
    RETURNS TABLE (key_id uuid, monthly_spend_limit_won numeric, total_spend_limit_won numeric,
                   rate_limit_requests_per_minute integer)
    LANGUAGE sql STABLE PARALLEL SAFE AS $$
      SELECT DISTINCT ON (data->>'keyId') (data->>'keyId')::uuid, (data->>'monthlySpendLimitWon')::numeric,
             (data->>'totalSpendLimitWon')::numeric, (data->>'rateLimitRequestsPerMinute')::integer
      FROM ledger_events WHERE type = 'ApiKeyLimitsSet'
      ORDER BY data->>'keyId', stream_version DESC
    $$;
  `,
};
