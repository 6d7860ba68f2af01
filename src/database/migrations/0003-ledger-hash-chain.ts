import type { Migration } from "../migration";

export const ledgerHashChainMigration: Migration = {
  id: 3,
  name: "ledger hash chain and checkpoints",
  sql: `
    -- NULL for the events already written: the first checkpoints seal those.
    ALTER TABLE ledger_events ADD COLUMN chain_hash bytea;

    CREATE TABLE ledger_checkpoints (
      sequence bigint PRIMARY KEY CHECK (sequence > 0),
      last_transaction_order bigint NOT NULL,
      last_position bigint NOT NULL,
      event_count integer NOT NULL CHECK (event_count > 0),
      events_root bytea NOT NULL,
      previous_checkpoint_hash bytea NOT NULL,
      checkpoint_hash bytea NOT NULL,
      signature bytea NOT NULL,
      public_key bytea NOT NULL,
      sealed_at timestamptz NOT NULL
    );
    CREATE INDEX ledger_checkpoints_last ON ledger_checkpoints (last_transaction_order, last_position);
  `,
};
