import type { DeclaredFunction } from "../../../database/declared-schema";

/**
 * The money each event moves on its account, one row per event (ledger_funds_movement, read from the
 * event's data). `data` is json (text), so every `data->>'field'` parses the whole document again: it reads
 * the event with a single `json_to_record`, as a set-returning SQL function of one SELECT, which the planner
 * inlines into a `LATERAL` call with plain arguments, the movement inlined in it. PARALLEL SAFE (it only
 * reads), so a rebuild's fold may use workers.
 */
export const ledgerFundsMovedFunction: DeclaredFunction = {
  kind: "function",
  name: "ledger_funds_moved",
  sql: `
    CREATE OR REPLACE FUNCTION ledger_funds_moved(type text, data json)
    RETURNS TABLE (account_kind text, account_id text, balance_won numeric, held_won numeric, pending_won numeric)
    LANGUAGE sql STABLE PARALLEL SAFE AS $$
      SELECT moved.*
      FROM json_to_record(data) AS event(account json, "amountWon" numeric, "holdWon" numeric,
        "releasedWon" numeric, "heldWon" numeric, "pendingWon" numeric, "releasedPendingWon" numeric)
      CROSS JOIN LATERAL ledger_funds_movement(type, event.account->>'kind', event.account->>'id',
        event."amountWon", event."holdWon", event."releasedWon", event."heldWon", event."pendingWon",
        event."releasedPendingWon") moved
    $$;
  `,
};
