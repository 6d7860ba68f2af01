import type { DeclaredFunction } from "../../../database/declared-schema";

/**
 * Each key's latest limits (key-limits.ts), its allowed models null where the event names none (v1).
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
                   rate_limit_requests_per_minute integer, allowed_models text[])
    LANGUAGE sql STABLE PARALLEL SAFE AS $$
      SELECT DISTINCT ON (data->>'keyId') (data->>'keyId')::uuid, (data->>'monthlySpendLimitWon')::numeric,
             (data->>'totalSpendLimitWon')::numeric, (data->>'rateLimitRequestsPerMinute')::integer,
             ledger_allowed_models_of(data)
      FROM ledger_events WHERE type = 'ApiKeyLimitsSet'
      ORDER BY data->>'keyId', stream_version DESC
    $$;
  `,
};
