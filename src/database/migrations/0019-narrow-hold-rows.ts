import type { Migration } from "../migration";

/**
 * A hold row keeps its authorization's fields as columns instead of the whole event
 * (src/ledger/schema/holds/request-holds.ts), and the log writer builds the event from them
 * (ledger-hold-authorization.ts). The rows of an earlier release still in the table — open, or settled and
 * not yet logged — take their columns from the event they kept, so they are logged with the very same event.
 * Pages filled to 15% at insert: a narrow row's completed version (its settlement beside it) is four times
 * its size, and must fit on its page beside the old version for the completion to stay a heap-only update.
 */
export const narrowHoldRowsMigration: Migration = {
  id: 19,
  name: "hold rows keep their authorization as columns",
  sql: `
    ALTER TABLE request_holds
      ADD COLUMN authorization_event_id uuid,
      ADD COLUMN authorization_schema_version smallint,
      ADD COLUMN user_id text,
      ADD COLUMN organization_id text,
      ADD COLUMN model text,
      ADD COLUMN endpoint text,
      ADD COLUMN streamed boolean,
      ADD COLUMN started_at timestamptz,
      ADD COLUMN input_tokens_max bigint,
      ADD COLUMN output_tokens_max bigint,
      ADD COLUMN estimated_won numeric;
    UPDATE request_holds SET
      authorization_event_id = (authorization_event->>'eventId')::uuid,
      authorization_schema_version = (authorization_event->>'schemaVersion')::smallint,
      user_id = authorization_event->'data'->>'userId',
      organization_id = authorization_event->'data'->>'organizationId',
      model = authorization_event->'data'->>'model',
      endpoint = authorization_event->'data'->>'endpoint',
      streamed = (authorization_event->'data'->>'streamed')::boolean,
      started_at = (authorization_event->'data'->>'startedAt')::timestamptz,
      input_tokens_max = (authorization_event->'data'->'estimate'->>'inputTokensMax')::bigint,
      output_tokens_max = (authorization_event->'data'->'estimate'->>'outputTokensMax')::bigint,
      estimated_won = (authorization_event->'data'->'estimate'->>'estimatedWon')::numeric;
    ALTER TABLE request_holds
      ALTER COLUMN authorization_event_id SET NOT NULL,
      ALTER COLUMN authorization_schema_version SET NOT NULL,
      ALTER COLUMN model SET NOT NULL,
      ALTER COLUMN endpoint SET NOT NULL,
      ALTER COLUMN streamed SET NOT NULL,
      ALTER COLUMN started_at SET NOT NULL,
      ALTER COLUMN input_tokens_max SET NOT NULL,
      ALTER COLUMN output_tokens_max SET NOT NULL,
      ALTER COLUMN estimated_won SET NOT NULL,
      DROP COLUMN authorization_event;
    ALTER TABLE request_holds SET (fillfactor = 15);
  `,
};
