import type { Migration } from "../migration";

/**
 * A hold's progress record names the configured fallback answering the request once one has begun to (null:
 * the model requested, and on every row written before), so the orphan sweep prices and names its
 * settlement as that model, as the gateway's own settlement would.
 */
export const holdProgressAnsweringModelMigration: Migration = {
  id: 30,
  name: "hold progress names the fallback answering",
  sql: `
    ALTER TABLE hold_progress ADD COLUMN answering_model text CHECK (answering_model <> '');
  `,
};
