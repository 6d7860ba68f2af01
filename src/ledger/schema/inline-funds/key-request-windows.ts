import type { DeclaredTable } from "../../../database/declared-schema";

/**
 * Each key's latest minute (of the database clock, `recorded_at`) with holds and how many it has. A fixed
 * one-minute window: one row per key, and a fold of the log like the rest.
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
