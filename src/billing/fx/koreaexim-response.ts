import { z } from "zod";
import { isAcceptableFxRate } from "../../kernel/charge-limits";
import { type Money, parseMoney } from "../../kernel/money";
import type { IsoDate } from "../../kernel/seoul-calendar";
import { KoreaeximMalformedResponseError, KoreaeximResultCodeError } from "./koreaexim-errors";

/**
 * The bank answers `exchangeJSON?data=AP01` with a JSON array, one row per currency, e.g.
 *   [{"result":1,"cur_unit":"USD","ttb":"1,468.56","tts":"1,498.23","deal_bas_r":"1,483.4",…,"cur_nm":"미국 달러"}]
 * an empty array on weekends, holidays and before ~11:00 KST on the day itself, and a single row with
 * only `result` set (2, 3 or 4) when it refuses. We read only the fields we use.
 */
const exchangeRowSchema = z.object({
  result: z.number().int(),
  cur_unit: z.string().nullable().optional(),
  deal_bas_r: z.string().nullable().optional(),
});
const exchangeBodySchema = z.array(exchangeRowSchema);
/** Some refusals have been reported as a bare object rather than a one-row array; treat both alike. */
const refusalObjectSchema = z.object({ result: z.number().int() });

export type KoreaeximDayAnswer = { kind: "no-rate-published" } | { kind: "rate"; rateKrwPerUsd: Money };

const successResultCode = 1;
const usdCurrencyUnit = "USD";
/** "1,483.4", "1483.4", "1,483": thousands separators only between groups of three digits. */
const bankDecimalPattern = /^(\d{1,3}(,\d{3})+|\d+)(\.\d+)?$/;

/** Strips the bank's thousands separators: "1,483.4" → "1483.4". */
export function parseBankDecimal(text: string): Money | null {
  const trimmed = text.trim();
  if (!bankDecimalPattern.test(trimmed)) return null;
  return parseMoney(trimmed.replaceAll(",", ""));
}

export function interpretExchangeBody(body: unknown, searchDate: IsoDate): KoreaeximDayAnswer {
  const refusal = refusalObjectSchema.safeParse(body);
  if (refusal.success && !Array.isArray(body) && refusal.data.result !== successResultCode) {
    throw new KoreaeximResultCodeError(refusal.data.result, searchDate);
  }
  const parsed = exchangeBodySchema.safeParse(body);
  if (!parsed.success) {
    throw new KoreaeximMalformedResponseError("not an array of exchange rows", searchDate);
  }
  const rows = parsed.data;
  if (rows.length === 0) return { kind: "no-rate-published" };

  const refusedRow = rows.find((row) => row.result !== successResultCode);
  if (refusedRow !== undefined) throw new KoreaeximResultCodeError(refusedRow.result, searchDate);

  const usdRow = rows.find((row) => row.cur_unit?.trim() === usdCurrencyUnit);
  if (usdRow === undefined) {
    throw new KoreaeximMalformedResponseError(`no USD row among ${rows.length} rows`, searchDate);
  }
  const rateKrwPerUsd = parseBankDecimal(usdRow.deal_bas_r ?? "");
  if (rateKrwPerUsd === null || !isAcceptableFxRate(rateKrwPerUsd)) {
    throw new KoreaeximMalformedResponseError("USD deal_bas_r is not an acceptable rate", searchDate);
  }
  return { kind: "rate", rateKrwPerUsd };
}
