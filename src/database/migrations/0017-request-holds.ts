import type { Migration } from "../migration";

/**
 * Holds as rows outside the log until their settlement is logged in batches
 * (src/ledger/schema/holds/request-holds.ts), and a key's requests per minute counted by each hold's grant
 * time, not its append's: the windows are folded again under that rule.
 */
export const requestHoldsMigration: Migration = {
  id: 17,
  name: "holds as rows, logged with their settlement in batches",
  sql: `
    CREATE TABLE request_holds (
      request_id text PRIMARY KEY,
      account_kind text NOT NULL,
      account_id text NOT NULL,
      key_id uuid NOT NULL,
      month text NOT NULL,
      hold_won numeric NOT NULL CHECK (hold_won >= 0),
      gateway_instance text NOT NULL,
      placed_at timestamptz NOT NULL,
      expires_at timestamptz NOT NULL,
      authorization_event jsonb NOT NULL,
      settlement_event jsonb,
      correction_event json,
      pending_won numeric,
      settled_at timestamptz,
      CHECK ((settlement_event IS NULL) = (settled_at IS NULL) AND (settled_at IS NULL) = (pending_won IS NULL))
    ) WITH (fillfactor = 50, autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000,
            autovacuum_vacuum_cost_delay = 0);
    CREATE INDEX request_holds_by_account ON request_holds (account_kind, account_id);
  `,
  sqlOnceDeclared: `
    DELETE FROM key_request_windows;
    INSERT INTO key_request_windows SELECT * FROM ledger_fold_key_request_windows();
  `,
};
