import type { Migration } from "../migration";

/** The account's funds in two rows (src/ledger/schema/inline-funds/account-funds.ts says why); the view is declared. */
export const splitAccountFundsMigration: Migration = {
  id: 4,
  name: "account funds in an authorized and a settled row",
  sql: `
    ALTER TABLE account_funds RENAME TO account_funds_settled;
    ALTER TABLE account_funds_settled RENAME CONSTRAINT account_funds_pkey TO account_funds_settled_pkey;

    CREATE TABLE account_funds_authorized (
      account_kind text NOT NULL,
      account_id text NOT NULL,
      authorized_won numeric NOT NULL DEFAULT 0,
      PRIMARY KEY (account_kind, account_id)
    );
    INSERT INTO account_funds_authorized (account_kind, account_id)
    SELECT account_kind, account_id FROM account_funds_settled;
  `,
};
