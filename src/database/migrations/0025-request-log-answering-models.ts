import type { Migration } from "../migration";

/**
 * The request log keeps the model that answered a request in the requested one's place (a configured
 * fallback), the model it was charged as, so an activity row reconciles with the billing history.
 */
export const requestLogAnsweringModelsMigration: Migration = {
  id: 25,
  name: "the request log keeps the model a fallback answered with",
  sql: "ALTER TABLE request_log ADD COLUMN answered_by text;",
};
