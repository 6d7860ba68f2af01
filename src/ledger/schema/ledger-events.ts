import type { DeclaredTable } from "../../database/declared-schema";

/** The log: every event, in the order of the transactions that wrote them (postgres-event-store.ts). */
export const ledgerEventsTable: DeclaredTable = {
  kind: "table",
  name: "ledger_events",
  sql: `
    CREATE TABLE ledger_events (
      transaction_order bigint NOT NULL,
      position bigint GENERATED ALWAYS AS IDENTITY,
      event_id uuid NOT NULL,
      stream_id text NOT NULL,
      stream_version integer NOT NULL,
      type text NOT NULL,
      schema_version smallint NOT NULL,
      -- json, not jsonb: the log is written once and read whole, and json is stored and returned as the
      -- text it was given, several times faster to read back than jsonb.
      data json NOT NULL,
      metadata json NOT NULL,
      recorded_at timestamptz NOT NULL DEFAULT now(),
      -- The event's link in its stream's hash chain (ledger-events-chain.ts); NULL only for events written
      -- before the chain existed, which the first checkpoints seal.
      chain_hash bytea,
      CONSTRAINT ledger_events_pkey PRIMARY KEY (transaction_order, position),
      CONSTRAINT ledger_events_event_id_key UNIQUE (event_id),
      CONSTRAINT ledger_events_stream_version_key UNIQUE (stream_id, stream_version)
    );
  `,
};
