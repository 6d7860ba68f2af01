import type { DeclaredView } from "../../../database/declared-schema";

/**
 * The accounts' funds (C10): the one read model that must be exact at every commit, because admission
 * decides on it: `available = balance − pending − held`. It is what the log has moved
 * (account-funds-logged.ts) plus the holds not yet logged (../holds/request-holds.ts): an open hold counts as
 * held, a settled one as its pending cost, a void as nothing. The log writer appends a row's events and
 * deletes the row in one transaction, so any snapshot counts each hold once, in one of the two places. Every
 * reader (admission, holds, balances, operators) reads this view.
 *
 * Why an authorization may read it without locking the settled row or the hold rows: a change it cannot see
 * yet (committing concurrently) is a top-up, a void, a charge or a logged batch (each only raises what is
 * available, or leaves it as it is), or a recorded usage. A recorded usage releases its hold and adds its
 * exact cost as pending: it lowers what is available only when the cost exceeds the hold — the hold was too
 * small, the one request C10's overdraft bound already allows for — and the next authorization after its
 * commit sees it. Two authorizations on one account still serialise on the authorized row, so the
 * check-and-hold stays atomic across every gateway.
 *
 * Held also counts what the orphan sweep keeps back of the holds it settled, until its time
 * (../holds/swept-hold-reserves.ts): a snapshot sees a swept hold whole, open or as its estimate plus its
 * reserve, both written by one statement.
 *
 * The hold rows are summed per account through their account index: a hot account has its requests in
 * flight and one batch of settled rows not yet logged. The reserves likewise (almost always none).
 *
 * `uncovered_won`: what the open holds cut down to the room left fall short of their estimates, which the
 * hold's decision counts against the account besides what is held (../holds/ledger-authorize-usage.ts says
 * why). Summed in the same pass over the account's hold rows, so a decision visits them once.
 */
export const accountFundsView: DeclaredView = {
  kind: "view",
  name: "account_funds",
  sql: `
    CREATE OR REPLACE VIEW account_funds AS
    SELECT logged.account_kind, logged.account_id, logged.balance_won,
           logged.held_won + coalesce(unlogged.held_won, 0) + coalesce(reserved.won, 0) AS held_won,
           logged.pending_won + coalesce(unlogged.pending_won, 0) AS pending_won,
           coalesce(unlogged.uncovered_won, 0) AS uncovered_won
    FROM account_funds_logged logged
    LEFT JOIN LATERAL (
      SELECT sum(holds.hold_won) FILTER (WHERE holds.settled_at IS NULL) AS held_won,
             sum(holds.pending_won) AS pending_won,
             sum(holds.estimated_won - holds.hold_won)
               FILTER (WHERE holds.settled_at IS NULL AND holds.hold_won < holds.estimated_won) AS uncovered_won
      FROM request_holds holds
      WHERE holds.account_kind = logged.account_kind AND holds.account_id = logged.account_id
    ) unlogged ON true
    LEFT JOIN LATERAL (
      SELECT sum(reserves.reserved_won) AS won FROM swept_hold_reserves reserves
      WHERE reserves.account_kind = logged.account_kind AND reserves.account_id = logged.account_id
        AND reserves.reserved_until > now()
    ) reserved ON true;
  `,
};
