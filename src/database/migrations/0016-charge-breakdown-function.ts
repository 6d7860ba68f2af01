import type { Migration } from "../migration";

/**
 * Declared a function only (src/ledger/schema/charging/ledger-charge-breakdown.ts): no table changes, but a
 * release that changes declarations still adds a migration, so an older process never puts older ones back.
 */
export const chargeBreakdownFunctionMigration: Migration = {
  id: 16,
  name: "the charge breakdown priced in SQL",
  sql: "",
};
