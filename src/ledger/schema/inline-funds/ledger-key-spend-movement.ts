import type { DeclaredFunction } from "../../../database/declared-schema";

/**
 * What each usage event moves on its key, one row per event (ledger_key_spend_change, read from the event's
 * data): the append trigger and the whole log's fold use it. Each event's fields are read with one
 * json_to_record (calling ledger_funds_moved from here, or '->>' field by field, doubled the cost of
 * appending usage). 'authorization_data' is the data of the stream's UsageAuthorized, given for voids only
 * (a void names neither key nor start).
 */
export const ledgerKeySpendMovementFunction: DeclaredFunction = {
  kind: "function",
  name: "ledger_key_spend_movement",
  sql: `
    CREATE OR REPLACE FUNCTION ledger_key_spend_movement(type text, data json, authorization_data json)
    RETURNS TABLE (key_id uuid, month text, held_won numeric, pending_won numeric, charged_won numeric)
    LANGUAGE sql STABLE PARALLEL SAFE AS $$
      SELECT change.*
      FROM json_to_record(data) AS event("keyId" uuid, "startedAt" timestamptz, "holdWon" numeric,
             "releasedWon" numeric, "heldWon" numeric, "pendingWon" numeric, "releasedPendingWon" numeric,
             "amountWon" numeric)
      LEFT JOIN json_to_record(authorization_data) AS authorization_event("keyId" uuid, "startedAt" timestamptz)
        ON true
      CROSS JOIN LATERAL ledger_key_spend_change(type, event."keyId", event."startedAt",
        authorization_event."keyId", authorization_event."startedAt", event."amountWon", event."holdWon",
        event."releasedWon", event."heldWon", event."pendingWon", event."releasedPendingWon") change
    $$;
  `,
};
