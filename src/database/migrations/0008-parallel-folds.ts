import type { Migration } from "../migration";

/**
 * Changed only functions, now declared as they stand (src/ledger/schema/inline-funds/: ledger-recompute-funds.ts
 * and the folds).
 */
export const parallelFoldsMigration: Migration = {
  id: 8,
  name: "the inline read models' folds in parallel workers",
  sql: "",
};
