import type { DeclaredFunction } from "../../../database/declared-schema";

/**
 * The money each event moves on its account, one row per event: the one definition the append trigger and
 * the fold both use. Every money event carries the amounts it moves, so it needs nothing but the event:
 *
 * | event            | balance        | held               | pending                     |
 * |------------------|----------------|--------------------|-----------------------------|
 * | CreditToppedUp   | + amountWon    |                    |                             |
 * | UsageAuthorized  |                | + holdWon          |                             |
 * | UsageVoided      |                | − releasedWon      |                             |
 * | UsageRecorded    |                | − heldWon          | + pendingWon                |
 * | UsageCharged     | − amountWon    |                    | − releasedPendingWon        |
 *
 * `data` is json (text), so every `data->>'field'` parses the whole document again: it reads the event with
 * a single `json_to_record`, as a set-returning SQL function of one SELECT, which the planner inlines into a
 * `LATERAL` call with plain arguments. PARALLEL SAFE (it only reads), so a rebuild's fold may use workers.
 */
export const ledgerFundsMovedFunction: DeclaredFunction = {
  kind: "function",
  name: "ledger_funds_moved",
  sql: `
    CREATE OR REPLACE FUNCTION ledger_funds_moved(type text, data json)
    RETURNS TABLE (account_kind text, account_id text, balance_won numeric, held_won numeric, pending_won numeric)
    LANGUAGE sql STABLE PARALLEL SAFE AS $$
      SELECT event.account->>'kind', event.account->>'id',
        CASE type WHEN 'CreditToppedUp' THEN event."amountWon"
                  WHEN 'UsageCharged' THEN -event."amountWon" ELSE 0 END,
        CASE type WHEN 'UsageAuthorized' THEN event."holdWon"
                  WHEN 'UsageVoided' THEN -event."releasedWon"
                  WHEN 'UsageRecorded' THEN -coalesce(event."heldWon", 0) ELSE 0 END,
        CASE type WHEN 'UsageRecorded' THEN coalesce(event."pendingWon", 0)
                  WHEN 'UsageCharged' THEN -coalesce(event."releasedPendingWon", 0) ELSE 0 END
      FROM json_to_record(data) AS event(account json, "amountWon" numeric, "holdWon" numeric,
        "releasedWon" numeric, "heldWon" numeric, "pendingWon" numeric, "releasedPendingWon" numeric)
    $$;
  `,
};
