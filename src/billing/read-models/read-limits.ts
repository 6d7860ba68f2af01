/** Bounds of the read APIs (paging, totals, listings), named with their unit. */
export const readLimits = {
  /** Charges one page of GET /llm/billing or /admin/billing may hold, and the default when paging. */
  billingPageRowsMax: 1_000,
  billingPageRowsDefault: 100,
  /** Groups (days, models or keys) one totals answer may hold; more is refused, never cut off. */
  billingTotalsGroupsMax: 10_000,
  /** Accounts one page of GET /admin/accounts may hold, and the default. */
  accountsPageRowsMax: 500,
  accountsPageRowsDefault: 50,
  /** Keys GET /admin/accounts/:kind/:id/keys returns (an account with more is an anomaly to look at). */
  accountKeysMax: 1_000,
  searchTextLengthMax: 200,
} as const;
