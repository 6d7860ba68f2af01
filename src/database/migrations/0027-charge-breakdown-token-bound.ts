import type { Migration } from "../migration";

/**
 * Changed only a function, declared as it stands: ledger_charge_breakdown
 * (src/ledger/schema/charging/ledger-charge-breakdown.ts) refuses a token count above 2,147,483,647, the
 * bound one request is billed within (`chargeLimits.tokensPerRequestMax`), where it took counts to 10¹².
 */
export const chargeBreakdownTokenBoundMigration: Migration = {
  id: 27,
  name: "the charge breakdown takes token counts within the billing bound",
  sql: "",
};
