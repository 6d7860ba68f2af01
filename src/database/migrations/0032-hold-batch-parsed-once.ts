import type { Migration } from "../migration";

/**
 * Changed only a function, declared as it stands (src/ledger/schema/holds/ledger-authorize-usage.ts: the
 * hold's batch parsed once, as jsonb, its signature unchanged).
 */
export const holdBatchParsedOnceMigration: Migration = {
  id: 32,
  name: "the hold's batch parsed once",
  sql: "",
};
