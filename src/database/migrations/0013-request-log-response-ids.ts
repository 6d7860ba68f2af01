import type { Migration } from "../migration";

/**
 * The request log keeps each served reply's body id (`chatcmpl-…`, `resp-…`), the id an SDK shows, so that
 * receipts and the activity log can be found by it as well as by `x-request-id`.
 */
export const requestLogResponseIdsMigration: Migration = {
  id: 13,
  name: "the request log keeps each reply's response id",
  sql: `
    ALTER TABLE request_log ADD COLUMN response_id text;
    CREATE INDEX request_log_response_id ON request_log (response_id) WHERE response_id IS NOT NULL;
  `,
};
