import type { Migration } from "../migration";

export const ledgerEventsMigration: Migration = {
  id: 1,
  name: "ledger events",
  sql: `
    CREATE TABLE ledger_events (
      transaction_order bigint NOT NULL,
      position bigint GENERATED ALWAYS AS IDENTITY,
      event_id uuid NOT NULL,
      stream_id text NOT NULL,
      stream_version integer NOT NULL,
      type text NOT NULL,
      schema_version smallint NOT NULL,
      data json NOT NULL,
      metadata json NOT NULL,
      recorded_at timestamptz NOT NULL DEFAULT now(),
      CONSTRAINT ledger_events_pkey PRIMARY KEY (transaction_order, position),
      CONSTRAINT ledger_events_event_id_key UNIQUE (event_id),
      CONSTRAINT ledger_events_stream_version_key UNIQUE (stream_id, stream_version)
    );

    CREATE TABLE ledger_settings (
      singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
      transaction_order_offset bigint NOT NULL DEFAULT 0
    );
    INSERT INTO ledger_settings DEFAULT VALUES;

    CREATE TABLE projection_checkpoints (
      projection text PRIMARY KEY,
      definition_version integer NOT NULL,
      commit_position bigint NOT NULL,
      prepare_position bigint NOT NULL,
      updated_at timestamptz NOT NULL DEFAULT now()
    );
  `,
};
