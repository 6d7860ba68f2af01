import type { Migration } from "../migration";

/**
 * A hold's progress record keeps the input and cached input its upstream reported before the stream's end
 * (messages' `message_start`, generateContent's chunks), so the orphan sweep bills those counts rather than
 * its estimate from the body's bytes. Null where none was reported, and on every row written before.
 */
export const holdProgressReportedInputMigration: Migration = {
  id: 28,
  name: "hold progress keeps the input its upstream reported",
  sql: `
    ALTER TABLE hold_progress
      ADD COLUMN input_tokens integer CHECK (input_tokens >= 0),
      ADD COLUMN cached_input_tokens integer,
      ADD CONSTRAINT hold_progress_cached_input_within_input CHECK (
        cached_input_tokens IS NULL
        OR (input_tokens IS NOT NULL AND cached_input_tokens BETWEEN 0 AND input_tokens)
      );
  `,
};
