import type { DeclaredFunction } from "../../../database/declared-schema";

/**
 * What each usage event moves on its key, one row per event: the one definition the append trigger and the
 * fold use. Its held and pending are those ledger_funds_moved gives the account, charged is the balance a
 * charge takes; written out as a set-returning SQL function of one SELECT, which the planner inlines,
 * reading each event's fields with one json_to_record (calling ledger_funds_moved from here, or '->>' field
 * by field, doubled the cost of appending usage). 'authorization_data' is the data of the stream's
 * UsageAuthorized, given for voids only (a void names neither key nor start).
 */
export const ledgerKeySpendMovementFunction: DeclaredFunction = {
  kind: "function",
  name: "ledger_key_spend_movement",
  sql: `
    CREATE OR REPLACE FUNCTION ledger_key_spend_movement(type text, data json, authorization_data json)
    RETURNS TABLE (key_id uuid, month text, held_won numeric, pending_won numeric, charged_won numeric)
    LANGUAGE sql STABLE PARALLEL SAFE AS $$
      SELECT coalesce(event."keyId", authorization_event."keyId"),
             to_char(coalesce(event."startedAt", authorization_event."startedAt") AT TIME ZONE 'Asia/Seoul',
                     'YYYY-MM'),
             CASE type WHEN 'UsageAuthorized' THEN event."holdWon"
                       WHEN 'UsageVoided' THEN -event."releasedWon"
                       WHEN 'UsageRecorded' THEN -coalesce(event."heldWon", 0) ELSE 0 END,
             CASE type WHEN 'UsageRecorded' THEN coalesce(event."pendingWon", 0)
                       WHEN 'UsageCharged' THEN -coalesce(event."releasedPendingWon", 0) ELSE 0 END,
             CASE type WHEN 'UsageCharged' THEN event."amountWon" ELSE 0 END
      FROM json_to_record(data) AS event("keyId" uuid, "startedAt" timestamptz, "holdWon" numeric,
             "releasedWon" numeric, "heldWon" numeric, "pendingWon" numeric, "releasedPendingWon" numeric,
             "amountWon" numeric)
      LEFT JOIN json_to_record(authorization_data) AS authorization_event("keyId" uuid, "startedAt" timestamptz)
        ON true
    $$;
  `,
};
