import type { Migration } from "../migration";

export const holdProgressMigration: Migration = {
  id: 9,
  name: "progress and renewal of the holds of requests in flight",
  sql: `
    CREATE TABLE hold_progress (
      request_id text PRIMARY KEY,
      gateway_instance text NOT NULL,
      output_tokens integer NOT NULL CHECK (output_tokens >= 0),
      renewed_until timestamptz NOT NULL,
      recorded_at timestamptz NOT NULL
    );
  `,
};
