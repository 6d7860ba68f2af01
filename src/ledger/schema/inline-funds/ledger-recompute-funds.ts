import type { DeclaredFunction } from "../../../database/declared-schema";

/**
 * Every inline read model folded afresh from the whole log (rebuild; migrations that add one ask for it).
 * Folded, everything is settled: the fold nets holds and their releases, so the authorized rows start at
 * zero.
 *
 * The live rows are deleted (and so locked against concurrent appends' triggers) before the log is folded,
 * so no append lands between the fold and the rows. The authorized rows, which holds lock, are locked as a
 * table first: the holds in flight end, and none starts until the caller commits. Deleted row by row, in the
 * table's order, they would deadlock with a batch of holds locking its accounts' rows in key order, and the
 * recompute would fail on an account's first row, inserted by a hold still committing. The folds run in
 * parallel workers where they can: an INSERT … SELECT never does in PostgreSQL 15, so the two long ones fold
 * into temporary tables first (CREATE TABLE AS may use workers), with the planner told that handing rows from
 * workers costs nothing here: it prices json_to_record as nearly free, so it would never split the parse.
 *
 * Given `folded_up_to`, the caller has folded the log up to that transaction order already (a rebuild in SQL,
 * from the events its chunks parsed: src/ledger/rebuild/fold-inline-funds.ts), as rows of movement to sum in
 * the temporary tables ledger_folded_funds and ledger_folded_key_spend; the events after it are folded here,
 * once the live rows are locked.
 */
export const ledgerRecomputeFundsFunction: DeclaredFunction = {
  kind: "function",
  name: "ledger_recompute_funds",
  sql: `
    CREATE OR REPLACE FUNCTION ledger_recompute_funds(folded_up_to bigint DEFAULT NULL) RETURNS void LANGUAGE plpgsql
      SET parallel_setup_cost = 0 SET parallel_tuple_cost = 0 AS $$
    BEGIN
      LOCK TABLE account_funds_authorized IN EXCLUSIVE MODE;
      DELETE FROM account_funds_authorized;
      DELETE FROM account_funds_settled;
      IF folded_up_to IS NULL THEN
        CREATE TEMPORARY TABLE ledger_folded_funds ON COMMIT DROP AS SELECT * FROM ledger_fold_account_funds();
      ELSE
        INSERT INTO ledger_folded_funds SELECT * FROM ledger_fold_account_funds(folded_up_to);
      END IF;
      INSERT INTO account_funds_settled (account_kind, account_id, balance_won, held_won, pending_won)
      SELECT account_kind, account_id, sum(balance_won), sum(held_won), sum(pending_won)
      FROM ledger_folded_funds GROUP BY account_kind, account_id;
      DROP TABLE ledger_folded_funds;
      INSERT INTO account_funds_authorized (account_kind, account_id)
      SELECT account_kind, account_id FROM account_funds_settled;
      DELETE FROM open_holds;
      INSERT INTO open_holds (request_id, account_kind, account_id, held_won, gateway_instance, placed_at, expires_at)
      SELECT * FROM ledger_fold_open_holds();
      -- Folded, everything is settled: the fold nets holds and their releases per key and month.
      DELETE FROM key_spend_authorized;
      DELETE FROM key_spend_settled;
      IF folded_up_to IS NULL THEN
        CREATE TEMPORARY TABLE ledger_folded_key_spend ON COMMIT DROP AS SELECT * FROM ledger_fold_key_spend();
      ELSE
        INSERT INTO ledger_folded_key_spend SELECT * FROM ledger_fold_key_spend(folded_up_to);
      END IF;
      INSERT INTO key_spend_settled (key_id, month, held_won, pending_won, charged_won)
      SELECT key_id, month, sum(held_won), sum(pending_won), sum(charged_won)
      FROM ledger_folded_key_spend GROUP BY key_id, month;
      DROP TABLE ledger_folded_key_spend;
      DELETE FROM key_request_windows;
      INSERT INTO key_request_windows SELECT * FROM ledger_fold_key_request_windows();
      DELETE FROM key_limits;
      INSERT INTO key_limits SELECT * FROM ledger_fold_key_limits();
    END $$;
  `,
};
