import type { Migration } from "../migration";

/**
 * Declarations only: a hold is refused for a key deactivated, deleted or no longer allowed its model since
 * the gateway's copy of it admitted the request (src/ledger/schema/holds/ledger-authorize-usage.ts). A release
 * that changes declarations still adds a migration, so an older process never puts older ones back.
 */
export const holdsCheckTheKeyMigration: Migration = {
  id: 22,
  name: "a hold refused for a key changed since its gateway admitted the request",
  sql: "",
};
