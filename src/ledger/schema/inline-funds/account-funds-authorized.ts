import type { DeclaredTable } from "../../../database/declared-schema";

/**
 * One row per account that only authorizations touch (account-funds.ts): `authorized_won` is the sum of every
 * hold ever placed; `ledger_authorize_usage` locks it (in one order) to serialise the decisions on one
 * account, and the append trigger adds the granted holds to it.
 */
export const accountFundsAuthorizedTable: DeclaredTable = {
  kind: "table",
  name: "account_funds_authorized",
  sql: `
    CREATE TABLE account_funds_authorized (
      account_kind text NOT NULL,
      account_id text NOT NULL,
      authorized_won numeric NOT NULL DEFAULT 0,
      PRIMARY KEY (account_kind, account_id)
    );
  `,
};
