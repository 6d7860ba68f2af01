import type { DeclaredTable } from "../../database/declared-schema";

/** How far each projection has folded the log, and under which definition (projection/projection.ts). */
export const projectionCheckpointsTable: DeclaredTable = {
  kind: "table",
  name: "projection_checkpoints",
  sql: `
    CREATE TABLE projection_checkpoints (
      projection text PRIMARY KEY,
      definition_version integer NOT NULL,
      commit_position bigint NOT NULL,
      prepare_position bigint NOT NULL,
      updated_at timestamptz NOT NULL DEFAULT now()
    );
  `,
};
