import type { DeclaredTable } from "../../database/declared-schema";

/**
 * transaction_order = the writing transaction's id + offset. The offset only moves when a restored database
 * hands out transaction ids below ones already stored (see postgres-event-store.ts). `ledger_id` names the
 * deployment outside its database (ledger-id.ts), drawn once by migration 31. One row, inserted by migration 1.
 */
export const ledgerSettingsTable: DeclaredTable = {
  kind: "table",
  name: "ledger_settings",
  sql: `
    CREATE TABLE ledger_settings (
      singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
      transaction_order_offset bigint NOT NULL DEFAULT 0,
      ledger_id uuid NOT NULL DEFAULT gen_random_uuid()
    );
  `,
};
