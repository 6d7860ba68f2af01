import type { BillingHistoryEntry } from "../../billing/read-models/billing-history";
import { isDecimalString } from "../../kernel/decimal-text";

/**
 * Billing history as CSV (RFC 4180): a header row, one row per charge with its whole breakdown, CRLF line
 * ends, and a field quoted (inner quotes doubled) when it holds a comma, a quote, CR or LF. A count the
 * upstream did not report is an empty field, never 0. Values are written as they are, numbers always, but
 * for one thing: a text a spreadsheet would take for a formula (a key's name such as `=HYPERLINK(…)`, which
 * any user can give) starts with an apostrophe, which spreadsheets show as text (OWASP, "CSV injection").
 */

type Column = readonly [header: string, value: (entry: BillingHistoryEntry) => string | number | null];

const columns: readonly Column[] = [
  ["request_id", (entry) => entry.requestId],
  ["account_kind", (entry) => entry.account.kind],
  ["account_id", (entry) => entry.account.id],
  ["key_id", (entry) => entry.keyId],
  ["key_name", (entry) => entry.keyName],
  ["model", (entry) => entry.model],
  ["endpoint", (entry) => entry.endpoint],
  ["started_at", (entry) => entry.startedAt],
  ["charged_at", (entry) => entry.chargedAt],
  ["input_tokens", (entry) => entry.breakdown.tokens.input],
  ["cached_input_tokens", (entry) => entry.breakdown.tokens.cached],
  ["output_tokens", (entry) => entry.breakdown.tokens.output],
  ["reasoning_tokens", (entry) => entry.breakdown.tokens.reasoning],
  ["input_usd_per_million_tokens", (entry) => entry.breakdown.inputUsdPerMillionTokens],
  ["cached_input_usd_per_million_tokens", (entry) => entry.breakdown.cachedInputUsdPerMillionTokens],
  ["output_usd_per_million_tokens", (entry) => entry.breakdown.outputUsdPerMillionTokens],
  ["usd", (entry) => entry.breakdown.usd],
  ["fx_rate_krw_per_usd", (entry) => entry.breakdown.fxRateKrwPerUsd],
  ["fx_rate_date", (entry) => entry.breakdown.fxRateDate],
  ["discount_rate", (entry) => entry.breakdown.discountRate],
  ["amount_won", (entry) => entry.amountWon],
  ["usage_source", (entry) => entry.breakdown.usageSource],
];

const lineEnd = "\r\n";

export function csvField(value: string | number | null): string {
  if (value === null) return "";
  const text = asText(String(value));
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/** What a spreadsheet starts a formula with; a decimal such as "-12.5" is a number, and stays one. */
const formulaStart = /^[=+\-@\t\r]/;

function asText(text: string): string {
  return formulaStart.test(text) && !isDecimalString(text) ? `'${text}` : text;
}

export function billingCsvHeader(): string {
  return columns.map(([header]) => header).join(",") + lineEnd;
}

export function billingCsvRows(entries: readonly BillingHistoryEntry[]): string {
  return entries
    .map((entry) => columns.map(([, value]) => csvField(value(entry))).join(",") + lineEnd)
    .join("");
}
