import type { Migration } from "../migration";

/**
 * What a swept hold's estimate did not use stays reserved while its gateway may still bill it
 * (src/ledger/schema/holds/swept-hold-reserves.ts); the accounts' funds count it as held. Holds swept by an
 * earlier release were released whole: nothing to carry over.
 */
export const sweptHoldReservesMigration: Migration = {
  id: 20,
  name: "a swept hold keeps what its estimate did not use reserved for its gateway's correction",
  sql: `
    CREATE TABLE swept_hold_reserves (
      request_id text PRIMARY KEY,
      account_kind text NOT NULL,
      account_id text NOT NULL,
      key_id uuid NOT NULL,
      month text NOT NULL,
      gateway_instance text NOT NULL,
      reserved_won numeric NOT NULL CHECK (reserved_won > 0),
      reserved_until timestamptz NOT NULL
    );
    CREATE INDEX swept_hold_reserves_by_account ON swept_hold_reserves (account_kind, account_id);
  `,
};
