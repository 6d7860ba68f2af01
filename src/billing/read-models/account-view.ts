import type pg from "pg";
import { inProjectionOrder } from "../../../projections";
import { balancesTable, pendingChargesTable } from "../../../projections/balances";
import { discountsTable } from "../../../projections/discounts";
import { fxRatesTable } from "../../../projections/fx-rates";
import { pricesTable } from "../../../projections/prices";
import type { AccountReference } from "../../ledger/events";
import { lockTablesBeforeSnapshot } from "../../ledger/projection/projection-snapshot";
import { readBalanceWon } from "./account-balances";
import { valuePendingCharges } from "./pending-charges-valuation";
import { createPricingReadModel } from "./pricing-read-model";

/** The projection tables the view reads: locked before its snapshot, so a refold never shows them empty. */
const snapshotTables = inProjectionOrder([
  balancesTable,
  pendingChargesTable,
  pricesTable,
  fxRatesTable,
  discountsTable,
]);

/**
 * An account as finance sees it (C6 `GET /admin/accounts/:kind/:id`): balance and pending usage read from
 * one snapshot, so that a charge applied between two reads is never counted in both or in neither.
 */
export async function readAccountView(
  pool: pg.Pool,
  account: AccountReference,
): Promise<{ balanceWon: string; pendingWon: string }> {
  const client = await pool.connect();
  try {
    await client.query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
    await lockTablesBeforeSnapshot(client, snapshotTables);
    const balanceWon = await readBalanceWon(client, account);
    const { pendingWon } = await valuePendingCharges(client, createPricingReadModel(client), account);
    await client.query("COMMIT");
    return { balanceWon, pendingWon };
  } catch (error) {
    await client.query("ROLLBACK").catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}
