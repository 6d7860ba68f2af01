import type { Migration } from "../migration";

/** Changed only a function, now declared as it stands (src/ledger/schema/ledger-event-hash.ts). */
export const inlinedChainHashMigration: Migration = {
  id: 7,
  name: "the chain hash function declared stable, so that it is inlined",
  sql: "",
};
