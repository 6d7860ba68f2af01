import type { Migration } from "../migration";

/**
 * Changed only a function, declared as it stands (src/ledger/schema/holds/ledger-authorize-usage.ts): a hold
 * reads a key's spend and request window only for the limits the key has.
 */
export const limitLookupsForLimitedKeysMigration: Migration = {
  id: 11,
  name: "a hold looks up a key's spend only for the limits it has",
  sql: "",
};
