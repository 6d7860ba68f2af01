import { randomUUID } from "node:crypto";
import type pg from "pg";
import { balancesProjection } from "../../../projections/balances";
import { assert } from "../../kernel/assert";
import { billingLimits } from "../../kernel/limits";
import { creditDecimalPlaces, formatMoney, type Money } from "../../kernel/money";
import type { AccountReference } from "../../ledger/events";
import { parseLedgerEvent } from "../../ledger/events";
import { accountStreamIdOf, readBalanceWon } from "../read-models/account-balances";
import { type CommandOrigin, metadataOf } from "./command-metadata";
import type { BillingWriteDependencies } from "./set-model-price";

/** TopUpCredit (C6 `POST /admin/accounts/:kind/:id/credits`): credit an account, answer its new balance. */

export function isAcceptableCreditAmount(amountWon: Money): boolean {
  return (
    amountWon.isFinite() &&
    amountWon.gt(0) &&
    amountWon.lt(billingLimits.creditAmountWonBelow) &&
    amountWon.decimalPlaces() <= creditDecimalPlaces
  );
}

export async function topUpCredit(
  dependencies: BillingWriteDependencies & { database: Pick<pg.Pool, "query"> },
  topUp: { account: AccountReference; amountWon: Money; reference: string },
  origin: CommandOrigin,
): Promise<{ balanceWon: string }> {
  // The routes refuse any other amount (400) before this: here one is a programmer error, never a top-up.
  assert(isAcceptableCreditAmount(topUp.amountWon), `a top-up of ${topUp.amountWon} won is not a credit`);
  const event = parseLedgerEvent({
    type: "CreditToppedUp",
    data: { account: topUp.account, amountWon: formatMoney(topUp.amountWon), reference: topUp.reference },
    metadata: metadataOf(origin, dependencies.clock),
  });
  const appended = await dependencies.store.append({
    streamId: accountStreamIdOf(topUp.account),
    expectedVersion: "any",
    events: [{ eventId: randomUUID(), event }],
  });
  await dependencies.waiter.waitFor(
    appended.position,
    [balancesProjection.name],
    dependencies.projectionWaitTimeoutMs,
  );
  // Read after the wait: the balance includes this top-up (and anything the projection applied with it).
  return { balanceWon: await readBalanceWon(dependencies.database, topUp.account) };
}
