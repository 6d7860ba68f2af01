import type { Migration } from "../migration";

/**
 * Changed only a function, declared as it stands: ledger_recompute_funds
 * (src/ledger/schema/inline-funds/ledger-recompute-funds.ts) locks the authorized funds table before it
 * deletes its rows.
 */
export const recomputeLocksAuthorizedFundsMigration: Migration = {
  id: 24,
  name: "the inline funds' recompute locks the authorized rows as a table",
  sql: "",
};
