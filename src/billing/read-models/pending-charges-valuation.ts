import type pg from "pg";
import { pendingChargesTable } from "../../../projections/balances";
import { billingLimits } from "../../kernel/limits";
import { formatMoney, Money, parseMoney } from "../../kernel/money";
import type { AccountReference, UsageTokens } from "../../ledger/events";
import { calculateCharge } from "../charging/charge-calculation";
import { discountOrganizationOf, usageStreamIdOf } from "../charging/charge-usage";
import { tokenCountsForPricing } from "../charging/recorded-charge-breakdown";
import type { PricingReadModel } from "./pricing-read-model";

/**
 * `pendingWon` of an account (C6 `GET /admin/accounts/:kind/:id`): its usage recorded but not charged
 * yet, priced with the same read model and formula as the reconciler — so it is exactly what the pending
 * charges will amount to, unless a price, discount or rate in force at their start is corrected later. A
 * pending correction (a late settlement after the sweep's estimate was charged) is charged the difference:
 * its usage's charge less what its request was already charged.
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
  /** What the request was charged before this usage: its corrected estimate's charge, "0" for a first usage. */
  charged_won: string;
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
      total = total.plus(parseMoney(charge.amountWon)).minus(parseMoney(row.charged_won));
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
    `SELECT pending.request_id, pending.model,
            to_char(pending.started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS started_at,
            pending.usage,
            (SELECT coalesce(sum((charged.data->>'amountWon')::numeric), 0)::text FROM ledger_events charged
             WHERE charged.stream_id = $5 || pending.request_id AND charged.type = 'UsageCharged'
               -- Charges before the pending usage alone (a corrected estimate's); its own charge, once
               -- appended, removes the row as the projection applies it, as for every usage.
               AND charged.stream_version < (
                 SELECT max(recorded.stream_version) FROM ledger_events recorded
                 WHERE recorded.stream_id = charged.stream_id AND recorded.type = 'UsageRecorded')
            ) AS charged_won
     FROM ${pendingChargesTable.name} pending
     WHERE pending.account_kind = $1 AND pending.account_id = $2 AND pending.request_id > $3
     ORDER BY pending.request_id
     LIMIT $4`,
    [account.kind, account.id, after, pageSize, usageStreamIdOf("")],
  );
  return result.rows;
}
