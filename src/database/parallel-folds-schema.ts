/**
 * Migration 8: the inline read models' folds may run in parallel workers.
 *
 * A rebuild recomputes every inline read model from the whole log (`ledger_recompute_funds`), and most of
 * that time goes to parsing the events' json, which two cores do in half the time. Two things kept it on
 * one: the functions were not declared PARALLEL SAFE (though they only read), and an INSERT … SELECT never
 * runs in parallel in PostgreSQL 15. So the functions are declared safe, and the recompute folds into
 * temporary tables first (CREATE TABLE AS may use workers), with the planner told that handing rows from
 * workers costs nothing here: it prices json_to_record as nearly free, so it would never split the parse.
 *
 * The recompute keeps migration 6's order: the live rows are deleted (and so locked against concurrent
 * appends' triggers) before the log is folded, so no append lands between the fold and the rows.
 */
export const parallelFoldsSchemaSql = `
  ALTER FUNCTION ledger_funds_moved(text, json) PARALLEL SAFE;
  ALTER FUNCTION ledger_key_spend_movement(text, json, json) PARALLEL SAFE;
  ALTER FUNCTION ledger_fold_account_funds() PARALLEL SAFE;
  ALTER FUNCTION ledger_fold_open_holds() PARALLEL SAFE;
  ALTER FUNCTION ledger_fold_key_spend() PARALLEL SAFE;
  ALTER FUNCTION ledger_fold_key_request_windows() PARALLEL SAFE;
  ALTER FUNCTION ledger_fold_key_limits() PARALLEL SAFE;

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
`;
