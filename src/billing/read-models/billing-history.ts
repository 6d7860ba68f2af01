import type pg from "pg";
import { billingHistoryTable } from "../../../projections/billing-history";
import { keyNamesTable } from "../../../projections/key-lists";
import { organizationKeyIssuersTable } from "../../../projections/organization-members";
import { canonicalMoney } from "../../kernel/money";
import type { AccountReference, ChargeBreakdownData } from "../../ledger/events";

/**
 * Charges of one account with their whole breakdown (C6 `GET /admin/billing`, C4 `GET /llm/billing`), in
 * the order the requests started. `from` is inclusive and `to` exclusive, both on the request's start —
 * the instant its price, discount and rate were taken at.
 */

export interface BillingHistoryQuery {
  account: AccountReference;
  from: Date | undefined;
  to: Date | undefined;
  /** Only the charges of the organization keys this user issued (a member's own, C14). */
  issuedByUserId?: string | undefined;
}

export interface BillingHistoryEntry {
  requestId: string;
  account: AccountReference;
  keyId: string;
  /** The key's name, kept after it is deleted; null for a key the ledger never issued. */
  keyName: string | null;
  model: string;
  endpoint: string;
  startedAt: string;
  chargedAt: string;
  amountWon: string;
  breakdown: ChargeBreakdownData;
}

interface Row {
  request_id: string;
  account_kind: AccountReference["kind"];
  account_id: string;
  key_id: string;
  key_name: string | null;
  model: string;
  endpoint: string;
  started_at: string;
  started_at_exact: string;
  charged_at: string;
  breakdown: ChargeBreakdownData;
}

/** More rows than one export may hold: the caller must narrow the range (400, never a truncated file). */
export class BillingHistoryTooLargeError extends Error {
  override readonly name = "BillingHistoryTooLargeError";
  constructor(
    readonly rowCount: number,
    readonly rowsMax: number,
  ) {
    super(`the range holds ${rowCount} charges, more than ${rowsMax}: narrow it with from and to`);
  }
}

/** The WHERE of a query over `billingHistoryTable` for `query`, with `rangeParameters` as $1–$5. */
export const rangeCondition = `account_kind = $1 AND account_id = $2
  AND ($3::timestamptz IS NULL OR started_at >= $3::timestamptz)
  AND ($4::timestamptz IS NULL OR started_at < $4::timestamptz)
  AND ($5::text IS NULL OR key_id IN (
    SELECT issued.key_id FROM ${organizationKeyIssuersTable.name} issued
    WHERE issued.organization_id = $2 AND issued.issued_by_user_id = $5))`;

export function rangeParameters(query: BillingHistoryQuery): (string | null)[] {
  return [
    query.account.kind,
    query.account.id,
    query.from?.toISOString() ?? null,
    query.to?.toISOString() ?? null,
    query.issuedByUserId ?? null,
  ];
}

/** Checks the size first, then yields pages, so an export either fits whole or is refused before it starts. */
export async function countBillingHistory(
  database: Pick<pg.Pool, "query">,
  query: BillingHistoryQuery,
  rowsMax: number,
): Promise<number> {
  const result = await database.query<{ count: string }>(
    `SELECT count(*)::text AS count FROM ${billingHistoryTable.name} WHERE ${rangeCondition}`,
    rangeParameters(query),
  );
  const rowCount = Number(result.rows[0]!.count);
  if (rowCount > rowsMax) throw new BillingHistoryTooLargeError(rowCount, rowsMax);
  return rowCount;
}

export async function* readBillingHistory(
  database: Pick<pg.Pool, "query">,
  query: BillingHistoryQuery,
  limits: { pageSize: number; rowsMax: number },
): AsyncGenerator<BillingHistoryEntry[]> {
  let after: ChargePosition | undefined;
  for (let page = 0; page <= Math.ceil(limits.rowsMax / limits.pageSize); page += 1) {
    const { entries, positions } = await readChargesAfter(database, query, after, limits.pageSize);
    if (entries.length === 0) return;
    yield entries;
    after = positions[positions.length - 1];
    if (entries.length < limits.pageSize) return;
  }
}

/** Where a charge stands in the history's order: its start (to the microsecond), then its request id. */
export interface ChargePosition {
  startedAt: string;
  requestId: string;
}

/** The history's order (oldest first, as exports are written) or its reverse (newest first, for consoles). */
export type ChargeOrder = "oldest" | "newest";

const orderClauses: Record<ChargeOrder, { after: string; orderBy: string }> = {
  oldest: { after: ">", orderBy: "charge.started_at, charge.request_id" },
  newest: { after: "<", orderBy: "charge.started_at DESC, charge.request_id DESC" },
};

/**
 * Up to `limit` charges of the range after `after` in `order` (an index range scan, backwards for newest
 * first, that stops at the limit), each with its position (`positions[i]` is `entries[i]`'s), for the next
 * read to start after.
 */
export async function readChargesAfter(
  database: Pick<pg.Pool, "query">,
  query: BillingHistoryQuery,
  after: ChargePosition | undefined,
  limit: number,
  order: ChargeOrder = "oldest",
): Promise<{ entries: BillingHistoryEntry[]; positions: ChargePosition[] }> {
  const clauses = orderClauses[order];
  const result = await database.query<Row>(
    `SELECT request_id, account_kind, account_id, charge.key_id,
            (SELECT named.name FROM ${keyNamesTable.name} named WHERE named.key_id = charge.key_id) AS key_name,
            model, endpoint,
            to_char(started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS started_at,
            to_char(started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS started_at_exact,
            to_char(charged_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS charged_at,
            breakdown
     FROM ${billingHistoryTable.name} charge
     WHERE ${rangeCondition}
       AND ($6::timestamptz IS NULL OR (started_at, request_id) ${clauses.after} ($6::timestamptz, $7::text))
     ORDER BY ${clauses.orderBy}
     LIMIT $8`,
    [...rangeParameters(query), after?.startedAt ?? null, after?.requestId ?? null, limit],
  );
  return {
    entries: result.rows.map(entryOf),
    positions: result.rows.map((row) => ({ startedAt: row.started_at_exact, requestId: row.request_id })),
  };
}

function entryOf(row: Row): BillingHistoryEntry {
  return {
    requestId: row.request_id,
    account: { kind: row.account_kind, id: row.account_id },
    keyId: row.key_id,
    keyName: row.key_name,
    model: row.model,
    endpoint: row.endpoint,
    startedAt: row.started_at,
    chargedAt: row.charged_at,
    amountWon: canonicalMoney(row.breakdown.amountWon),
    breakdown: canonicalBreakdown(row.breakdown),
  };
}

/**
 * The breakdown as recorded, its charge in the API's one money form: a charge's event keeps its six places
 * ("0.003150"), the API says "0.00315" as the statement and the balance do (docs/api.md, "Money"). Its other
 * decimals (prices, usd, rate, discount) were recorded in that form already (charge-calculation.ts).
 */
function canonicalBreakdown(breakdown: ChargeBreakdownData): ChargeBreakdownData {
  return { ...breakdown, amountWon: canonicalMoney(breakdown.amountWon) };
}
