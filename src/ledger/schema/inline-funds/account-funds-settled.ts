import type { DeclaredTable } from "../../../database/declared-schema";

/**
 * An account's funds moved by everything but holds — credit, releases of holds (recorded, voided), pending
 * costs, charges (account-funds.ts). Its `held_won` is minus every hold released.
 */
export const accountFundsSettledTable: DeclaredTable = {
  kind: "table",
  name: "account_funds_settled",
  sql: `
    CREATE TABLE account_funds_settled (
      account_kind text NOT NULL,
      account_id text NOT NULL,
      balance_won numeric NOT NULL DEFAULT 0,
      pending_won numeric NOT NULL DEFAULT 0,
      held_won numeric NOT NULL DEFAULT 0,
      CONSTRAINT account_funds_settled_pkey PRIMARY KEY (account_kind, account_id)
    );
  `,
};
