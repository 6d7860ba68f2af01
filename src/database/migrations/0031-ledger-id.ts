import type { Migration } from "../migration";

/**
 * The ledger's id (ledger-id.ts), drawn once for the one settings row: on a database that has one, when this
 * runs; on a new one, when migration 1 has just inserted it. Every process of the deployment reads the same
 * value; a restored backup or a promoted replica keeps it.
 */
export const ledgerIdMigration: Migration = {
  id: 31,
  name: "ledger id",
  sql: `
    ALTER TABLE ledger_settings ADD COLUMN ledger_id uuid NOT NULL DEFAULT gen_random_uuid();
  `,
};
