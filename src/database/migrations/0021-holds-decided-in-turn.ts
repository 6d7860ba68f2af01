import type { Migration } from "../migration";

/**
 * Declarations only: a batch's holds decided one after another (src/ledger/schema/holds/ledger-authorize-usage.ts),
 * and a hold its account cut counted whole against its key (ledger-key-limit-usage.ts, key-spend.ts). A release
 * that changes declarations still adds a migration, so an older process never puts older ones back.
 */
export const holdsDecidedInTurnMigration: Migration = {
  id: 21,
  name: "a batch's holds decided in turn, and a cut hold counted whole against its key",
  sql: "",
};
