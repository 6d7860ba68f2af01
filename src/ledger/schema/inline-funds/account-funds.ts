import type { DeclaredView } from "../../../database/declared-schema";

/**
 * The accounts' funds, kept inline with the log (C10): the one read model that must be exact at every
 * commit, because admission decides on it: `available = balance − pending − held`. The append trigger
 * (ledger-apply-funds.ts) moves it in the appending transaction, whatever path appended, so it always equals
 * a fold of the log (ledger-recompute-funds.ts).
 *
 * It is two rows, so that placing a hold never waits for a settlement: `account_funds_authorized`, which only
 * holds touch and lock, and `account_funds_settled`, moved by everything else. With one row, a hold queued
 * behind the worker's charge batches and the previous request's recorded usage: on a busy account each
 * authorization waited one or more commits that cannot change its answer in any way that matters. This view
 * nets them — `held_won = settled.held_won + authorized_won`, the open holds — and every reader (admission,
 * verify, tests, operators) reads it.
 *
 * Why an authorization may read the settled row without its lock: a settlement it cannot see yet
 * (committing concurrently) is a top-up, a void or a charge (each only raises what is available, or leaves
 * it as it is), or a recorded usage. A recorded usage releases its hold and adds its exact cost as pending:
 * it lowers what is available only when the cost exceeds the hold — the hold was too small, the one request
 * C10's overdraft bound already allows for — and the next authorization after its commit sees it. Two
 * authorizations on one account still serialise on the authorized row, so the check-and-hold stays atomic
 * across every gateway.
 *
 * A plain join (no aggregate), so a lookup of one account is two index probes.
 */
export const accountFundsView: DeclaredView = {
  kind: "view",
  name: "account_funds",
  sql: `
    CREATE OR REPLACE VIEW account_funds AS
    SELECT settled.account_kind, settled.account_id, settled.balance_won,
           settled.held_won + coalesce(authorized.authorized_won, 0) AS held_won, settled.pending_won
    FROM account_funds_settled settled
    LEFT JOIN account_funds_authorized authorized USING (account_kind, account_id);
  `,
};
