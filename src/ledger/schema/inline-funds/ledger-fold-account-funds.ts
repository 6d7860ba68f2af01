import type { DeclaredFunction } from "../../../database/declared-schema";

/**
 * The accounts' funds (account-funds.ts).
 *
 * A fold of the whole log, one query: ledger_recompute_funds writes it (rebuild), src/ledger/inline-funds.ts
 * compares it with the live rows (verify). Given `after_order`, a fold of the events after that transaction
 * order only (what a rebuild's chunks did not fold). PARALLEL SAFE (it only reads), so a fold of a long log
 * may use workers.
 */
export const ledgerFoldAccountFundsFunction: DeclaredFunction = {
  kind: "function",
  name: "ledger_fold_account_funds",
  sql: `
    CREATE OR REPLACE FUNCTION ledger_fold_account_funds(after_order bigint DEFAULT NULL)
    RETURNS TABLE (account_kind text, account_id text, balance_won numeric, held_won numeric, pending_won numeric)
    LANGUAGE sql STABLE PARALLEL SAFE AS $$
      SELECT moved.account_kind, moved.account_id, sum(moved.balance_won), sum(moved.held_won),
             sum(moved.pending_won)
      FROM ledger_events event CROSS JOIN LATERAL ledger_funds_moved(event.type, event.data) moved
      WHERE event.type IN ('CreditToppedUp', 'UsageAuthorized', 'UsageVoided', 'UsageRecorded', 'UsageCharged')
        AND (after_order IS NULL OR event.transaction_order > after_order)
      GROUP BY moved.account_kind, moved.account_id
    $$;
  `,
};
