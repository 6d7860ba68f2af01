import type { Migration } from "../migration";

/**
 * Declarations only: the accounts' funds (src/ledger/schema/inline-funds/account-funds.ts) sum what the open
 * holds cut to the room left do not cover in their one pass over the account's hold rows, and the hold's
 * decision (src/ledger/schema/holds/ledger-authorize-usage.ts) reads it there instead of visiting the rows
 * again. A release that changes declarations still adds a migration, so an older process never puts older
 * ones back.
 */
export const holdFundsInOnePassMigration: Migration = {
  id: 32,
  name: "a hold's funds read in one pass over the account's hold rows",
  sql: "",
};
