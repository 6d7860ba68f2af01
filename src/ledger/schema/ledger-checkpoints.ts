import type { DeclaredTable, DeclaredTrigger } from "../../database/declared-schema";

/**
 * Signed seals over the global order (src/ledger/integrity/ledger-checkpointer.ts). Rows of their own, not
 * events: a seal is a statement about the log, not a business fact, and as an event it would be inside the
 * very order it seals, reach every projection and subscriber, and make every seal wait for the next one.
 */
export const ledgerCheckpointsTable: DeclaredTable = {
  kind: "table",
  name: "ledger_checkpoints",
  sql: `
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

export const ledgerCheckpointsImmutableTrigger: DeclaredTrigger = {
  kind: "trigger",
  name: "ledger_checkpoints_immutable",
  table: "ledger_checkpoints",
  sql: `
    CREATE OR REPLACE TRIGGER ledger_checkpoints_immutable BEFORE UPDATE OR DELETE OR TRUNCATE ON ledger_checkpoints
      FOR EACH STATEMENT EXECUTE FUNCTION ledger_events_immutable();
  `,
};
