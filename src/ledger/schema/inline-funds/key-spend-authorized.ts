import type { DeclaredTable } from "../../../database/declared-schema";

/** The sum of the holds placed per key and Seoul month, written only by authorizations (key-spend.ts). */
export const keySpendAuthorizedTable: DeclaredTable = {
  kind: "table",
  name: "key_spend_authorized",
  sql: `
    CREATE TABLE key_spend_authorized (
      key_id uuid NOT NULL,
      month text NOT NULL,
      authorized_won numeric NOT NULL DEFAULT 0,
      PRIMARY KEY (key_id, month)
    );
  `,
};
