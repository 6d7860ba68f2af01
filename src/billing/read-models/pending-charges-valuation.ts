import type pg from "pg";
import { pendingChargesTable } from "../../../projections/balances";
import { billingLimits } from "../../kernel/limits";
import { formatMoney, Money, parseMoney } from "../../kernel/money";
import type { AccountReference, UsageTokens } from "../../ledger/events";
import { calculateCharge } from "../charging/charge-calculation";
import { discountOrganizationOf } from "../charging/charge-usage";
import { tokenCountsForPricing } from "../charging/recorded-charge-breakdown";
import type { PricingReadModel } from "./pricing-read-model";

/**
 * `pendingWon` of an account (C6 `GET /admin/accounts/:kind/:id`): its usage recorded but not charged
 * yet, priced with the same read model and formula as the reconciler — so it is exactly what the pending
 * charges will amount to, unless a price, discount or rate in force at their start is corrected later.
 */

export class TooManyPendingChargesError extends Error {
  override readonly name = "TooManyPendingChargesError";
  constructor(
    readonly account: AccountReference,
    readonly pendingCount: number,
  ) {
    super(
      `account ${account.kind}:${account.id} has ${pendingCount} uncharged usages, more than can be priced at once`,
    );
  }
}

interface PendingRow {
  request_id: string;
  model: string;
  started_at: string;
  usage: { tokens: UsageTokens };
}

export async function valuePendingCharges(
  database: Pick<pg.Pool, "query">,
  pricing: PricingReadModel,
  account: AccountReference,
  pendingChargesPricedMax: number = billingLimits.pendingChargesPricedMax,
): Promise<{ pendingWon: string; pendingCount: number }> {
  const counted = await database.query<{ count: string }>(
    `SELECT count(*)::text AS count FROM ${pendingChargesTable.name} WHERE account_kind = $1 AND account_id = $2`,
    [account.kind, account.id],
  );
  const pendingCount = Number(counted.rows[0]!.count);
  if (pendingCount > pendingChargesPricedMax) throw new TooManyPendingChargesError(account, pendingCount);

  let total = new Money(0);
  let after = "";
  const pageSize = billingLimits.pricingRequestsPerQueryMax;
  // Bounded by the count above; a usage recorded meanwhile may add one page at most per page read.
  for (let page = 0; page <= Math.ceil(pendingChargesPricedMax / pageSize); page += 1) {
    const rows = await readPendingPage(database, account, after, pageSize);
    if (rows.length === 0) break;
    const prices = await pricing.pricingAt(
      rows.map((row) => ({
        model: row.model,
        organizationId: discountOrganizationOf(account),
        startedAt: new Date(row.started_at),
      })),
    );
    rows.forEach((row, index) => {
      const inForce = prices[index]!;
      const charge = calculateCharge({
        tokens: tokenCountsForPricing(row.usage.tokens),
        unitPrices: inForce.unitPrices,
        fxRate: inForce.fxRate,
        discountRate: inForce.discount.rate,
      });
      total = total.plus(parseMoney(charge.amountWon));
    });
    after = rows[rows.length - 1]!.request_id;
    if (rows.length < pageSize) break;
  }
  return { pendingWon: formatMoney(total), pendingCount };
}

async function readPendingPage(
  database: Pick<pg.Pool, "query">,
  account: AccountReference,
  after: string,
  pageSize: number,
): Promise<PendingRow[]> {
  const result = await database.query<PendingRow>(
    `SELECT request_id, model, to_char(started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS started_at, usage
     FROM ${pendingChargesTable.name}
     WHERE account_kind = $1 AND account_id = $2 AND request_id > $3
     ORDER BY request_id
     LIMIT $4`,
    [account.kind, account.id, after, pageSize],
  );
  return result.rows;
}
