import type { Migration } from "../migration";

/** The folds that parse each event once are declared (src/ledger/schema/); what they replaced goes. */
export const singleParseFoldsMigration: Migration = {
  id: 6,
  name: "the inline read models folded with one parse of each event",
  sql: "DROP FUNCTION IF EXISTS ledger_funds_movement(text, json);",
};
