import type { DeclaredFunction } from "../../../database/declared-schema";

/**
 * The open holds: authorizations not yet followed by their usage or a void (open-holds.ts).
 *
 * A fold of the whole log, one query: ledger_recompute_funds writes it (rebuild), src/ledger/inline-funds.ts
 * compares it with the live rows (verify). PARALLEL SAFE (it only reads), so a fold of a long log may use
 * workers.
 */
export const ledgerFoldOpenHoldsFunction: DeclaredFunction = {
  kind: "function",
  name: "ledger_fold_open_holds",
  sql: `
    CREATE OR REPLACE FUNCTION ledger_fold_open_holds()
    RETURNS TABLE (request_id text, account_kind text, account_id text, held_won numeric, gateway_instance text,
                   placed_at timestamptz, expires_at timestamptz)
    LANGUAGE sql STABLE PARALLEL SAFE AS $$
      SELECT held.data->>'requestId', held.data->'account'->>'kind', held.data->'account'->>'id',
             (held.data->>'holdWon')::numeric, held.data->>'gatewayInstance',
             (held.data->>'startedAt')::timestamptz, (held.data->>'expiresAt')::timestamptz
      FROM ledger_events held
      WHERE held.type = 'UsageAuthorized'
        AND NOT EXISTS (
          SELECT 1 FROM ledger_events settled
          WHERE settled.stream_id = held.stream_id AND settled.stream_version > held.stream_version
            AND settled.type IN ('UsageRecorded', 'UsageVoided'))
    $$;
  `,
};
