import type { DeclaredFunction } from "../../../database/declared-schema";

/**
 * Every inline read model folded afresh from the whole log (rebuild; migrations that add one ask for it).
 * Folded, everything is settled: the fold nets holds and their releases, so the authorized rows start at
 * zero.
 *
 * The live rows are deleted (and so locked against concurrent appends' triggers) before the log is folded,
 * so no append lands between the fold and the rows. The folds run in parallel workers where they can: an
 * INSERT … SELECT never does in PostgreSQL 15, so the two long ones fold into temporary tables first (CREATE
 * TABLE AS may use workers), with the planner told that handing rows from workers costs nothing here: it
 * prices json_to_record as nearly free, so it would never split the parse.
 */
export const ledgerRecomputeFundsFunction: DeclaredFunction = {
  kind: "function",
  name: "ledger_recompute_funds",
  sql: `
    CREATE OR REPLACE FUNCTION ledger_recompute_funds() RETURNS void LANGUAGE plpgsql
      SET parallel_setup_cost = 0 SET parallel_tuple_cost = 0 AS $$
    BEGIN
      DELETE FROM account_funds_authorized;
      DELETE FROM account_funds_settled;
      CREATE TEMPORARY TABLE ledger_folded_funds ON COMMIT DROP AS SELECT * FROM ledger_fold_account_funds();
      INSERT INTO account_funds_settled (account_kind, account_id, balance_won, held_won, pending_won)
      SELECT * FROM ledger_folded_funds;
      DROP TABLE ledger_folded_funds;
      INSERT INTO account_funds_authorized (account_kind, account_id)
      SELECT account_kind, account_id FROM account_funds_settled;
      DELETE FROM open_holds;
      INSERT INTO open_holds (request_id, account_kind, account_id, held_won, gateway_instance, placed_at, expires_at)
      SELECT * FROM ledger_fold_open_holds();
      -- Folded, everything is settled: the fold nets holds and their releases per key and month.
      DELETE FROM key_spend_authorized;
      DELETE FROM key_spend_settled;
      CREATE TEMPORARY TABLE ledger_folded_key_spend ON COMMIT DROP AS SELECT * FROM ledger_fold_key_spend();
      INSERT INTO key_spend_settled SELECT * FROM ledger_folded_key_spend;
      DROP TABLE ledger_folded_key_spend;
      DELETE FROM key_request_windows;
      INSERT INTO key_request_windows SELECT * FROM ledger_fold_key_request_windows();
      DELETE FROM key_limits;
      INSERT INTO key_limits SELECT * FROM ledger_fold_key_limits();
    END $$;
  `,
};
