import type { DeclaredFunction } from "../../../database/declared-schema";

/**
 * The money an event moves on its account, from the event's fields: the one definition the append trigger,
 * the whole log's fold (both through ledger_funds_moved) and a rebuild's chunks (whose events are parsed
 * already, src/ledger/rebuild/fold-inline-funds.ts) use.
 *
 * | event            | balance        | held               | pending                     |
 * |------------------|----------------|--------------------|-----------------------------|
 * | CreditToppedUp   | + amountWon    |                    |                             |
 * | UsageAuthorized  |                | + holdWon          |                             |
 * | UsageVoided      |                | − releasedWon      |                             |
 * | UsageRecorded    |                | − heldWon          | + pendingWon                |
 * | UsageCharged     | − amountWon    |                    | − releasedPendingWon        |
 *
 * A set-returning SQL function of one SELECT without FROM: the planner inlines it where it is called.
 */
export const ledgerFundsMovementFunction: DeclaredFunction = {
  kind: "function",
  name: "ledger_funds_movement",
  sql: `
    CREATE OR REPLACE FUNCTION ledger_funds_movement(type text, kind text, id text, amount_won numeric,
      hold_won numeric, released_won numeric, recorded_held_won numeric, recorded_pending_won numeric,
      released_pending_won numeric)
    RETURNS TABLE (account_kind text, account_id text, balance_won numeric, held_won numeric, pending_won numeric)
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
      SELECT kind, id,
        CASE type WHEN 'CreditToppedUp' THEN amount_won WHEN 'UsageCharged' THEN -amount_won ELSE 0 END,
        CASE type WHEN 'UsageAuthorized' THEN hold_won
                  WHEN 'UsageVoided' THEN -released_won
                  WHEN 'UsageRecorded' THEN -coalesce(recorded_held_won, 0) ELSE 0 END,
        CASE type WHEN 'UsageRecorded' THEN coalesce(recorded_pending_won, 0)
                  WHEN 'UsageCharged' THEN -coalesce(released_pending_won, 0) ELSE 0 END
    $$;
  `,
};
