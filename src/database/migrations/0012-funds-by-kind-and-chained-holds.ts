import type { Migration } from "../migration";

/**
 * Changed only functions, declared as they stand: the append trigger moves only the read models of the kinds
 * of event a statement appended, with a key's settled spend inlined and open holds deleted by key
 * (src/ledger/schema/inline-funds/ledger-apply-funds.ts), and a hold computes its own chain link
 * (src/ledger/schema/holds/ledger-authorize-usage.ts).
 */
export const fundsByKindAndChainedHoldsMigration: Migration = {
  id: 12,
  name: "the append trigger moves the read models of the kinds appended; holds chain themselves",
  sql: "",
};
