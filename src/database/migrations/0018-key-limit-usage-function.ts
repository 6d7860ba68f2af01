import type { Migration } from "../migration";

/**
 * Declared functions only: a hold asks what a key has used against its limits from a function of its own
 * (src/ledger/schema/holds/ledger-key-limit-usage.ts), called only for a key with a spend or rate limit.
 */
export const keyLimitUsageFunctionMigration: Migration = {
  id: 18,
  name: "a hold asks a key's usage against its limits only for a key with one",
  sql: "",
};
