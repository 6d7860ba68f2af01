import type { DeclaredFunction } from "../../../database/declared-schema";

/**
 * Each key's spend per month (key-spend.ts); a void's authorization is found by a join, so that its
 * movement is inlined too.
 *
 * A fold of the whole log, one query: ledger_recompute_funds writes it (rebuild), src/ledger/inline-funds.ts
 * compares it with the live rows (verify). Given `after_order`, a fold of the events after that transaction
 * order only (what a rebuild's chunks did not fold). PARALLEL SAFE (it only reads), so a fold of a long log
 * may use workers.
 */
export const ledgerFoldKeySpendFunction: DeclaredFunction = {
  kind: "function",
  name: "ledger_fold_key_spend",
  sql: `
    CREATE OR REPLACE FUNCTION ledger_fold_key_spend(after_order bigint DEFAULT NULL)
    RETURNS TABLE (key_id uuid, month text, held_won numeric, pending_won numeric, charged_won numeric)
    LANGUAGE sql STABLE PARALLEL SAFE AS $$
      SELECT movement.key_id, movement.month, sum(movement.held_won), sum(movement.pending_won),
             sum(movement.charged_won)
      FROM ledger_events event
      LEFT JOIN ledger_events held
        ON event.type = 'UsageVoided' AND held.stream_id = event.stream_id AND held.stream_version = 0
           AND held.type = 'UsageAuthorized'
      CROSS JOIN LATERAL ledger_key_spend_movement(event.type, event.data, held.data) movement
      WHERE event.type IN ('UsageAuthorized', 'UsageVoided', 'UsageRecorded', 'UsageCharged')
        AND (after_order IS NULL OR event.transaction_order > after_order)
        AND movement.key_id IS NOT NULL
      GROUP BY movement.key_id, movement.month
    $$;
  `,
};
