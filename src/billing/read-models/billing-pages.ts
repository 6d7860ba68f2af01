import type pg from "pg";
import { billingHistoryTable } from "../../../projections/billing-history";
import { canonicalMoney } from "../../kernel/money";
import {
  accountDigestOf,
  type CursorScope,
  cursorReadFor,
  decodePositionCursor,
  encodePositionCursor,
} from "../../kernel/position-cursor";
import {
  type BillingHistoryEntry,
  type BillingHistoryQuery,
  type ChargeOrder,
  type ChargePosition,
  rangeCondition,
  rangeParameters,
  readChargesAfter,
} from "./billing-history";

/**
 * Billing history a page at a time (cursor paging, for consoles and scripts) and its totals by Seoul day,
 * model or key. The cursor is opaque to clients: the (start instant, request id) of the last row served,
 * in the export's order or its reverse (`order`), so pages never skip or repeat a charge however rows arrive.
 * It names its account and order: a cursor passed back alone goes on the way its page went, and one of
 * another account, or with the other order, is refused.
 */

export interface BillingPage {
  data: BillingHistoryEntry[];
  /** Pass back as `cursor` for the next page; null on the last page. */
  nextCursor: string | null;
}

export class InvalidBillingCursorError extends Error {
  override readonly name = "InvalidBillingCursorError";
  constructor(message = "cursor: must be a nextCursor returned by a previous page") {
    super(message);
  }
}

const chargeOrders: readonly ChargeOrder[] = ["oldest", "newest"];

export function encodeBillingCursor(cursor: ChargePosition, scope: CursorScope<ChargeOrder>): string {
  return encodePositionCursor(cursor, scope);
}

/** Charges are read back with microsecond instants. */
export function decodeBillingCursor(
  text: string,
): ChargePosition & { scope: CursorScope<ChargeOrder> | undefined } {
  const position = decodePositionCursor(text, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/, chargeOrders);
  if (!position) throw new InvalidBillingCursorError();
  return position;
}

/**
 * The order a page is read in: as asked, else the cursor's, else the export's. A cursor read the other way
 * would serve again the pages already read, so asking for another order than the cursor's is bad input.
 */
function pageOrderOf(asked: ChargeOrder | undefined, cursorOrder: ChargeOrder | undefined): ChargeOrder {
  if (asked !== undefined && cursorOrder !== undefined && asked !== cursorOrder)
    throw new InvalidBillingCursorError(
      `cursor: was given by a page in order=${cursorOrder}; pass it with that order, or with none`,
    );
  return asked ?? cursorOrder ?? "oldest";
}

export async function readBillingPage(
  database: Pick<pg.Pool, "query">,
  query: BillingHistoryQuery,
  page: { limit: number; cursor: string | undefined; order?: ChargeOrder | undefined },
): Promise<BillingPage> {
  const after = page.cursor === undefined ? undefined : decodeBillingCursor(page.cursor);
  // Read as a position among this account's charges, another account's cursor would skip some unseen.
  if (after !== undefined && !cursorReadFor(after.scope, query.account))
    throw new InvalidBillingCursorError("cursor: was given by a page of another account");
  const order = pageOrderOf(page.order, after?.scope?.order);
  // One more than the page: whether there is a next page, without a count.
  const { entries, positions } = await readChargesAfter(database, query, after, page.limit + 1, order);
  const lastServed = positions[page.limit - 1];
  return {
    data: entries.slice(0, page.limit),
    nextCursor:
      entries.length > page.limit && lastServed
        ? encodeBillingCursor(lastServed, { account: accountDigestOf(query.account), order })
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
  // The overall sums ride on every group row (a window over the groups): one scan of the range, not two.
  const result = await database.query<{
    group: string;
    charges: string;
    amount_won: string;
    all_charges: string;
    all_amount_won: string;
  }>(
    `SELECT ${group} AS group, count(*)::text AS charges, sum(amount_won)::text AS amount_won,
            sum(count(*)) OVER ()::text AS all_charges, sum(sum(amount_won)) OVER ()::text AS all_amount_won
     FROM ${billingHistoryTable.name} charge
     WHERE ${rangeCondition}
     GROUP BY 1 ORDER BY 1 LIMIT $6`,
    [...rangeParameters(query), groupsMax + 1],
  );
  if (result.rows.length > groupsMax) throw new TooManyBillingGroupsError(groupsMax);
  const overall = result.rows[0];
  return {
    totals: result.rows.map((row) => ({
      group: row.group,
      charges: Number(row.charges),
      amountWon: canonicalMoney(row.amount_won),
    })),
    charges: overall ? Number(overall.all_charges) : 0,
    amountWon: canonicalMoney(overall?.all_amount_won ?? "0"),
  };
}
