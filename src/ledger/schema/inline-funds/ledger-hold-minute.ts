import type { DeclaredFunction } from "../../../database/declared-schema";

/**
 * The key and the minute a hold counts in for its key's requests per minute (key-request-windows.ts): the
 * minute of its `occurredAt`, which the hold statement sets to the database's clock at the grant
 * (../holds/ledger-authorize-usage.ts) — not the minute its event was appended, which for a hold logged with
 * its settlement is later. The one definition the append trigger and the fold use; an inlined SQL function
 * of one SELECT, like ledger_funds_moved.
 */
export const ledgerHoldMinuteFunction: DeclaredFunction = {
  kind: "function",
  name: "ledger_hold_minute",
  sql: `
    CREATE OR REPLACE FUNCTION ledger_hold_minute(data json, metadata json)
    RETURNS TABLE (key_id uuid, minute timestamptz)
    LANGUAGE sql STABLE PARALLEL SAFE AS $$
      SELECT hold."keyId", date_trunc('minute', held."occurredAt")
      FROM json_to_record(data) AS hold("keyId" uuid), json_to_record(metadata) AS held("occurredAt" timestamptz)
    $$;
  `,
};
