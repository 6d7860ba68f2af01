import type { DeclaredFunction } from "../../../database/declared-schema";

/**
 * What a usage event moves on its key, from the event's fields: the one definition the append trigger, the
 * whole log's fold (both through ledger_key_spend_movement) and a rebuild's chunks
 * (src/ledger/rebuild/fold-inline-funds.ts) use. Its held and pending are those ledger_funds_movement gives
 * the account, charged is the balance a charge takes. A void names neither key nor start: they are its
 * authorization's (`authorization_key_id`, `authorization_started_at`, given for voids only).
 *
 * SQL functions of one SELECT all the way down: the planner inlines them where they are called.
 */
export const ledgerKeySpendChangeFunction: DeclaredFunction = {
  kind: "function",
  name: "ledger_key_spend_change",
  sql: `
    CREATE OR REPLACE FUNCTION ledger_key_spend_change(type text, event_key_id uuid, event_started_at timestamptz,
      authorization_key_id uuid, authorization_started_at timestamptz, amount_won numeric, hold_won numeric,
      released_won numeric, recorded_held_won numeric, recorded_pending_won numeric,
      released_pending_won numeric)
    RETURNS TABLE (key_id uuid, month text, held_won numeric, pending_won numeric, charged_won numeric)
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
      SELECT coalesce(event_key_id, authorization_key_id),
             to_char(coalesce(event_started_at, authorization_started_at) AT TIME ZONE 'Asia/Seoul', 'YYYY-MM'),
             moved.held_won, moved.pending_won,
             CASE type WHEN 'UsageCharged' THEN amount_won ELSE 0 END
      FROM ledger_funds_movement(type, NULL, NULL, amount_won, hold_won, released_won, recorded_held_won,
             recorded_pending_won, released_pending_won) moved
    $$;
  `,
};
