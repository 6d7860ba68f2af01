import type { DeclaredTable } from "../../../database/declared-schema";

/**
 * Each key's latest minute with logged holds and how many it has (a hold counts in the minute of its grant,
 * ledger-hold-minute.ts; the holds not yet logged are counted from their rows). A fixed one-minute window:
 * one row per key, and a fold of the log like the rest.
 */
export const keyRequestWindowsTable: DeclaredTable = {
  kind: "table",
  name: "key_request_windows",
  sql: `
    CREATE TABLE key_request_windows (
      key_id uuid PRIMARY KEY,
      window_start timestamptz NOT NULL,
      requests integer NOT NULL
    );
  `,
};
