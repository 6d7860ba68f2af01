import type { Migration } from "../migration";

export const accountFundsMigration: Migration = {
  id: 2,
  name: "account funds, open holds and the authorization of usage",
  sql: `
    CREATE TABLE account_funds (
      account_kind text NOT NULL,
      account_id text NOT NULL,
      balance_won numeric NOT NULL DEFAULT 0,
      pending_won numeric NOT NULL DEFAULT 0,
      held_won numeric NOT NULL DEFAULT 0,
      PRIMARY KEY (account_kind, account_id)
    );

    CREATE TABLE open_holds (
      request_id text PRIMARY KEY,
      account_kind text NOT NULL,
      account_id text NOT NULL,
      held_won numeric NOT NULL,
      gateway_instance text NOT NULL,
      placed_at timestamptz NOT NULL,
      expires_at timestamptz NOT NULL
    );
    CREATE INDEX open_holds_by_instance ON open_holds (gateway_instance);

    CREATE TABLE gateway_instances (
      instance_id text PRIMARY KEY,
      seen_at timestamptz NOT NULL
    );
  `,
  // A ledger from before this migration starts with its funds folded from the log so far.
  sqlOnceDeclared: "SELECT ledger_recompute_funds()",
};
