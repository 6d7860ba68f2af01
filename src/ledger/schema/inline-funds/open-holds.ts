import type { DeclaredTable } from "../../../database/declared-schema";

/** The holds not yet recorded or voided, kept by the append trigger, for the orphan sweep. */
export const openHoldsTable: DeclaredTable = {
  kind: "table",
  name: "open_holds",
  sql: `
    CREATE TABLE open_holds (
      request_id text PRIMARY KEY,
      account_kind text NOT NULL,
      account_id text NOT NULL,
      held_won numeric NOT NULL,
      gateway_instance text NOT NULL,
      placed_at timestamptz NOT NULL,
      expires_at timestamptz NOT NULL
    );
    CREATE INDEX open_holds_by_instance ON open_holds (gateway_instance);
  `,
};
