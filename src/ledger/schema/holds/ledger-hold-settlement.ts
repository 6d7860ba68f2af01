import type { DeclaredFunction } from "../../../database/declared-schema";

/**
 * A settled hold row's settlement event, whole (event id, type, schema version, data, metadata), as the log
 * writer appends it: the row keeps only what its own columns do not say (hold-row-completion.ts), and this
 * adds the rest back from them — the request, and for a usage the key, the account, the user and
 * organization, the endpoint, whether it streamed and when it started (its authorization's, the same
 * request's); in the metadata the request as correlation. What the row keeps wins: a row completed by an
 * earlier release, which kept the whole event, builds back into that very event. jsonb, as the row keeps
 * it, so the text appended and hashed is the one the row's whole event gave. Null for an open row.
 */
export const ledgerHoldSettlementFunction: DeclaredFunction = {
  kind: "function",
  name: "ledger_hold_settlement",
  sql: `
    CREATE OR REPLACE FUNCTION ledger_hold_settlement(hold request_holds) RETURNS jsonb
    LANGUAGE sql STABLE AS $$
      SELECT hold.settlement_event || jsonb_build_object(
        'data', CASE hold.settlement_event->>'type'
          WHEN 'UsageRecorded' THEN jsonb_build_object(
            'requestId', hold.request_id,
            'keyId', hold.key_id,
            'account', jsonb_build_object('kind', hold.account_kind, 'id', hold.account_id),
            'userId', hold.user_id,
            'organizationId', hold.organization_id,
            'endpoint', hold.endpoint,
            'streamed', hold.streamed,
            'startedAt', to_char(hold.started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
          ELSE jsonb_build_object(
            'requestId', hold.request_id,
            'account', jsonb_build_object('kind', hold.account_kind, 'id', hold.account_id))
          END || (hold.settlement_event->'data'),
        'metadata', jsonb_build_object('correlationId', hold.request_id) || (hold.settlement_event->'metadata'))
    $$;
  `,
};
