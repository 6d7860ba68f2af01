import type pg from "pg";
import { pendingChargesTable } from "../../../projections/balances";
import type { AccountReference } from "../../ledger/events";
import {
  type PricingUnavailableReason,
  pricingUnavailableReasonOf,
  termsFoundSql,
  termsInForceJoins,
} from "./pricing-read-model";

/**
 * An account's usage recorded and not charged yet that nothing prices at its start: no price of its model
 * then (in the ledger, nor the catalog's default), or no FX rate recorded by then. The reconciler leaves it
 * pending until an operator records one; the account's funds count it as pending at the cost recorded with
 * it. Found with the lookups that price a charge (pricing-read-model.ts), one statement however many usages
 * are pending, so it is named, never a reason to answer nothing.
 */
export interface UnpriceablePending {
  model: string;
  reason: PricingUnavailableReason;
  requests: number;
  oldestStartedAt: string;
}

/** Per model and reason, by model; empty when the reconciler can price every pending usage. */
export async function readUnpriceablePending(
  database: Pick<pg.Pool, "query">,
  account: AccountReference,
): Promise<UnpriceablePending[]> {
  const result = await database.query<{
    model: string;
    price_found: boolean;
    fx_rate_found: boolean;
    requests: number;
    oldest_started_at: string;
  }>(
    `SELECT pending.model, ${termsFoundSql.price} AS price_found, ${termsFoundSql.fxRate} AS fx_rate_found,
            count(*)::integer AS requests,
            to_char(min(pending.started_at) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS oldest_started_at
     FROM (SELECT model, started_at, (started_at AT TIME ZONE 'Asia/Seoul')::date AS seoul_date
           FROM ${pendingChargesTable.name} WHERE account_kind = $1 AND account_id = $2) pending
     ${termsInForceJoins("pending")}
     GROUP BY 1, 2, 3`,
    [account.kind, account.id],
  );
  const found = new Map<string, UnpriceablePending>();
  for (const row of result.rows) {
    const reason = pricingUnavailableReasonOf(row.model, {
      price: row.price_found,
      fxRate: row.fx_rate_found,
    });
    if (reason === null) continue;
    // A model's usages with a price and without one may lack the rate alike: one entry per model and reason.
    const key = `${reason} ${row.model}`;
    const known = found.get(key);
    found.set(key, {
      model: row.model,
      reason,
      requests: (known?.requests ?? 0) + row.requests,
      oldestStartedAt:
        known === undefined || row.oldest_started_at < known.oldestStartedAt
          ? row.oldest_started_at
          : known.oldestStartedAt,
    });
  }
  return [...found.values()].sort(
    (one, other) => compareText(one.model, other.model) || compareText(one.reason, other.reason),
  );
}

/** By code point, as the database's "C" order would: never the host's locale. */
function compareText(one: string, other: string): number {
  return one < other ? -1 : one > other ? 1 : 0;
}
