import type pg from "pg";
import { billingHistoryTable } from "../../../projections/billing-history";
import { isStorableText } from "../../database/storable-text";
import type { ChargeBreakdownData } from "../../ledger/events";
import type { BillingHistoryEntry, BillingHistoryQuery } from "./billing-history";

/**
 * Billing history a page at a time (cursor paging, for consoles and scripts) and its totals by Seoul day,
 * model or key. The cursor is opaque to clients: the (start instant, request id) of the last row served,
 * the same order the whole export uses, so pages never skip or repeat a charge however rows arrive.
 */

export interface BillingPage {
  data: BillingHistoryEntry[];
  /** Pass back as `cursor` for the next page; null on the last page. */
  nextCursor: string | null;
}

interface Row {
  request_id: string;
  account_kind: BillingHistoryEntry["account"]["kind"];
  account_id: string;
  key_id: string;
  model: string;
  endpoint: string;
  started_at: string;
  started_at_exact: string;
  charged_at: string;
  breakdown: ChargeBreakdownData;
}

interface Cursor {
  startedAt: string;
  requestId: string;
}

export class InvalidBillingCursorError extends Error {
  override readonly name = "InvalidBillingCursorError";
  constructor() {
    super("cursor: must be a nextCursor returned by a previous page");
  }
}

export function encodeBillingCursor(cursor: Cursor): string {
  return Buffer.from(JSON.stringify([cursor.startedAt, cursor.requestId])).toString("base64url");
}

export function decodeBillingCursor(text: string): Cursor {
  try {
    const decoded = JSON.parse(Buffer.from(text, "base64url").toString("utf8")) as unknown;
    if (
      Array.isArray(decoded) &&
      decoded.length === 2 &&
      typeof decoded[0] === "string" &&
      /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/.test(decoded[0]) &&
      typeof decoded[1] === "string" &&
      decoded[1].length <= 200 &&
      isStorableText(decoded[1])
    )
      return { startedAt: decoded[0], requestId: decoded[1] };
  } catch {
    // Falls through to the error below.
  }
  throw new InvalidBillingCursorError();
}

const rangeCondition = `account_kind = $1 AND account_id = $2
  AND ($3::timestamptz IS NULL OR started_at >= $3::timestamptz)
  AND ($4::timestamptz IS NULL OR started_at < $4::timestamptz)`;

function rangeParameters(query: BillingHistoryQuery): (string | null)[] {
  return [
    query.account.kind,
    query.account.id,
    query.from?.toISOString() ?? null,
    query.to?.toISOString() ?? null,
  ];
}

export async function readBillingPage(
  database: Pick<pg.Pool, "query">,
  query: BillingHistoryQuery,
  page: { limit: number; cursor: string | undefined },
): Promise<BillingPage> {
  const after = page.cursor === undefined ? undefined : decodeBillingCursor(page.cursor);
  const result = await database.query<Row>(
    `SELECT request_id, account_kind, account_id, key_id, model, endpoint,
            to_char(started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS started_at,
            to_char(started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS started_at_exact,
            to_char(charged_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS charged_at,
            breakdown
     FROM ${billingHistoryTable.name} charge
     WHERE ${rangeCondition}
       AND ($5::timestamptz IS NULL OR (started_at, request_id) > ($5::timestamptz, $6::text))
     ORDER BY charge.started_at, charge.request_id
     LIMIT $7`,
    [...rangeParameters(query), after?.startedAt ?? null, after?.requestId ?? null, page.limit + 1],
  );
  const rows = result.rows.slice(0, page.limit);
  const last = rows[rows.length - 1];
  return {
    data: rows.map((row) => ({
      requestId: row.request_id,
      account: { kind: row.account_kind, id: row.account_id },
      keyId: row.key_id,
      model: row.model,
      endpoint: row.endpoint,
      startedAt: row.started_at,
      chargedAt: row.charged_at,
      amountWon: row.breakdown.amountWon,
      breakdown: row.breakdown,
    })),
    nextCursor:
      result.rows.length > page.limit && last
        ? encodeBillingCursor({ startedAt: last.started_at_exact, requestId: last.request_id })
        : null,
  };
}

export const billingTotalGroupings = ["day", "model", "key"] as const;
export type BillingTotalGrouping = (typeof billingTotalGroupings)[number];

export interface BillingTotal {
  /** The Seoul date (day), the model slug (model) or the key's uuid (key). */
  group: string;
  charges: number;
  amountWon: string;
}

/** More groups than one answer may hold: the caller narrows the range (400, never a cut-off list). */
export class TooManyBillingGroupsError extends Error {
  override readonly name = "TooManyBillingGroupsError";
  constructor(readonly groupsMax: number) {
    super(`the range holds more than ${groupsMax} groups: narrow it with from and to`);
  }
}

const groupExpressions: Record<BillingTotalGrouping, string> = {
  // Billing days are Seoul days (C7).
  day: "to_char(started_at AT TIME ZONE 'Asia/Seoul', 'YYYY-MM-DD')",
  model: "model",
  key: "key_id",
};

/** Exact sums (NUMERIC, as text) of the charges in the range, one row per group, in group order. */
export async function readBillingTotals(
  database: Pick<pg.Pool, "query">,
  query: BillingHistoryQuery,
  groupBy: BillingTotalGrouping,
  groupsMax: number,
): Promise<{ totals: BillingTotal[]; charges: number; amountWon: string }> {
  const group = groupExpressions[groupBy];
  const result = await database.query<{ group: string; charges: string; amount_won: string }>(
    `SELECT ${group} AS group, count(*)::text AS charges, sum(amount_won)::text AS amount_won
     FROM ${billingHistoryTable.name} charge
     WHERE ${rangeCondition}
     GROUP BY 1 ORDER BY 1 LIMIT $5`,
    [...rangeParameters(query), groupsMax + 1],
  );
  if (result.rows.length > groupsMax) throw new TooManyBillingGroupsError(groupsMax);
  const overall = await database.query<{ charges: string; amount_won: string }>(
    `SELECT count(*)::text AS charges, coalesce(sum(amount_won), 0)::text AS amount_won
     FROM ${billingHistoryTable.name} WHERE ${rangeCondition}`,
    rangeParameters(query),
  );
  return {
    totals: result.rows.map((row) => ({
      group: row.group,
      charges: Number(row.charges),
      amountWon: row.amount_won,
    })),
    charges: Number(overall.rows[0]!.charges),
    amountWon: overall.rows[0]!.amount_won,
  };
}
