import type { DeclaredFunction } from "../../../database/declared-schema";

/**
 * A hold row's `UsageAuthorized`, whole (event id, type, schema version, data, metadata), as the log writer
 * appends it and the orphan sweep reads it: built from the row's columns (request-holds.ts), the very event
 * the gateway validated (generation-holds.ts) with the statement's grant in it — `holdWon`, and the grant's
 * time as `occurredAt`. Its metadata is a hold's: the key as actor, the request as correlation (the holds port
 * takes none: src/billing/holds/usage-authorizations.ts). Instants are written as
 * JavaScript's `toISOString` writes them (UTC, milliseconds), so an instant the gateway sent comes back as it
 * was sent; jsonb, as the row kept the event before, so the text appended and hashed is the same.
 */
export const ledgerHoldAuthorizationFunction: DeclaredFunction = {
  kind: "function",
  name: "ledger_hold_authorization",
  sql: `
    CREATE OR REPLACE FUNCTION ledger_hold_authorization(hold request_holds) RETURNS jsonb
    LANGUAGE sql STABLE AS $$
      SELECT jsonb_build_object(
        'eventId', hold.authorization_event_id,
        'type', 'UsageAuthorized',
        'schemaVersion', hold.authorization_schema_version,
        'data', jsonb_build_object(
          'requestId', hold.request_id,
          'keyId', hold.key_id,
          'account', jsonb_build_object('kind', hold.account_kind, 'id', hold.account_id),
          'userId', hold.user_id,
          'organizationId', hold.organization_id,
          'model', hold.model,
          'endpoint', hold.endpoint,
          'streamed', hold.streamed,
          'startedAt', to_char(hold.started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
          'estimate', jsonb_build_object('inputTokensMax', hold.input_tokens_max,
            'outputTokensMax', hold.output_tokens_max, 'estimatedWon', hold.estimated_won::text),
          'gatewayInstance', hold.gateway_instance,
          'expiresAt', to_char(hold.expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
          'holdWon', hold.hold_won::text),
        'metadata', jsonb_build_object(
          'actor', 'key:' || hold.key_id,
          'correlationId', hold.request_id,
          'occurredAt', to_char(hold.placed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')))
    $$;
  `,
};
