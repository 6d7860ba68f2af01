import type { DeclaredTable } from "../../../database/declared-schema";

/** A key's spend per Seoul month moved by everything but holds (key-spend.ts). */
export const keySpendSettledTable: DeclaredTable = {
  kind: "table",
  name: "key_spend_settled",
  sql: `
    CREATE TABLE key_spend_settled (
      key_id uuid NOT NULL,
      month text NOT NULL,
      held_won numeric NOT NULL DEFAULT 0,
      pending_won numeric NOT NULL DEFAULT 0,
      charged_won numeric NOT NULL DEFAULT 0,
      PRIMARY KEY (key_id, month)
    );
  `,
};
