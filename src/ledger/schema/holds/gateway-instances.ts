import type { DeclaredTable } from "../../../database/declared-schema";

/** Each gateway process's heartbeat: a hold whose process stopped beating is an orphan. */
export const gatewayInstancesTable: DeclaredTable = {
  kind: "table",
  name: "gateway_instances",
  sql: `
    CREATE TABLE gateway_instances (
      instance_id text PRIMARY KEY,
      seen_at timestamptz NOT NULL
    );
  `,
};
