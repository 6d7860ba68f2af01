import { billingCsvHeader, billingCsvRows } from "../../../src/gateway/admin/billing-csv";
import type { BillingHistoryEntry } from "./api";

/**
 * The charges of a range as CSV, in the server's one schema (`GET /admin/billing?format=csv`, the finance
 * export): every field of each charge's breakdown, so the won can be recomputed, money as its exact string.
 */

export { csvField } from "../../../src/gateway/admin/billing-csv";

/** The whole file for `entries`: the header line, then one line per charge. */
export function chargesCsv(entries: readonly BillingHistoryEntry[]): string {
  return chargesCsvHeader() + chargesCsvRows(entries);
}

export function chargesCsvHeader(): string {
  return billingCsvHeader();
}

/** Lines of `entries` alone, so an export can be written a page at a time after one header. */
export function chargesCsvRows(entries: readonly BillingHistoryEntry[]): string {
  return billingCsvRows(entries);
}
