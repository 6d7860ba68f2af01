import type { BillingHistoryEntry } from "./api";

/**
 * The charges of a range as CSV, with every field of each charge's breakdown so the won can be recomputed.
 * Money stays the exact decimal string.
 */

const header = [
  "request_id",
  "started_at",
  "charged_at",
  "account_kind",
  "account_id",
  "key_id",
  "key_name",
  "model",
  "endpoint",
  "input_tokens",
  "cached_tokens",
  "output_tokens",
  "reasoning_tokens",
  "input_usd_per_1m",
  "cached_input_usd_per_1m",
  "output_usd_per_1m",
  "usd",
  "fx_rate_krw_per_usd",
  "fx_rate_date",
  "discount_rate",
  "amount_won",
  "usage_source",
];

/** RFC 4180 quoting; a leading = + - @ is neutralised so a spreadsheet never runs a cell as a formula. */
export function csvField(value: string | number | null): string {
  if (value === null) return "";
  let text = String(value);
  if (/^[=+\-@\t\r]/.test(text) && !/^-?\d+(\.\d+)?$/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/** The whole file for `entries`: the header line, then one line per charge. */
export function chargesCsv(entries: readonly BillingHistoryEntry[]): string {
  return chargesCsvHeader() + chargesCsvRows(entries);
}

export function chargesCsvHeader(): string {
  return `${header.join(",")}\r\n`;
}

/** Lines of `entries` alone, so an export can be written a page at a time after one header. */
export function chargesCsvRows(entries: readonly BillingHistoryEntry[]): string {
  const lines: string[] = [];
  for (const entry of entries) {
    const b = entry.breakdown;
    lines.push(
      [
        entry.requestId,
        entry.startedAt,
        entry.chargedAt,
        entry.account.kind,
        entry.account.id,
        entry.keyId,
        entry.keyName,
        entry.model,
        entry.endpoint,
        b.tokens.input,
        b.tokens.cached,
        b.tokens.output,
        b.tokens.reasoning,
        b.inputUsdPerMillionTokens,
        b.cachedInputUsdPerMillionTokens,
        b.outputUsdPerMillionTokens,
        b.usd,
        b.fxRateKrwPerUsd,
        b.fxRateDate,
        b.discountRate,
        entry.amountWon,
        b.usageSource,
      ]
        .map(csvField)
        .join(","),
    );
  }
  return lines.map((line) => `${line}\r\n`).join("");
}
