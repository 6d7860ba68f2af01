import { randomUUID } from "node:crypto";
import type pg from "pg";
import { balancesProjection } from "../../../projections/balances";
import { assert } from "../../kernel/assert";
import { billingLimits } from "../../kernel/limits";
import { creditDecimalPlaces, formatMoney, type Money, parseMoney } from "../../kernel/money";
import type { AccountReference } from "../../ledger/events";
import { parseLedgerEvent } from "../../ledger/events";
import { readBackRecorded } from "../../ledger/projection/recorded-not-visible";
import { accountStreamIdOf, readBalanceWon } from "../read-models/account-balances";
import { type CommandOrigin, metadataOf } from "./command-metadata";
import { creditToppedUpEventId } from "./deterministic-event-id";
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

/** An `Idempotency-Key` already used on this account for a top-up of another amount or reference. */
export class IdempotencyKeyReusedError extends Error {
  override readonly name = "IdempotencyKeyReusedError";
  constructor() {
    super(
      "This Idempotency-Key was already used on this account for a top-up of another amount or reference",
    );
  }
}

/**
 * With an `idempotencyKey`, a retry — after a lost answer or a 503 whose top-up was recorded — credits
 * nothing more: the event's id is derived from the account and the key, so the store keeps one event, and
 * the answer is the balance once that one top-up is applied.
 */
export async function topUpCredit(
  dependencies: BillingWriteDependencies & { database: Pick<pg.Pool, "query"> },
  topUp: {
    account: AccountReference;
    amountWon: Money;
    reference: string;
    idempotencyKey?: string | undefined;
  },
  origin: CommandOrigin,
): Promise<{ balanceWon: string }> {
  // The routes refuse any other amount (400) before this: here one is a programmer error, never a top-up.
  assert(isAcceptableCreditAmount(topUp.amountWon), `a top-up of ${topUp.amountWon} won is not a credit`);
  const data = {
    account: topUp.account,
    amountWon: formatMoney(topUp.amountWon),
    reference: topUp.reference,
  };
  const event = parseLedgerEvent({
    type: "CreditToppedUp",
    data,
    metadata: metadataOf(origin, dependencies.clock),
  });
  const streamId = accountStreamIdOf(topUp.account);
  const key = topUp.idempotencyKey;
  const eventId = key === undefined ? randomUUID() : creditToppedUpEventId(streamId, key);
  // A retry (or a concurrent twin) is recognised by the store as the event it already holds.
  const { position } = await dependencies.store.append({
    streamId,
    expectedVersion: "any",
    events: [{ eventId, event }],
  });
  if (key !== undefined) {
    // Read back what the store holds under the key: another body stored first means this one credited nothing.
    const stored = (await readBackRecorded(() => dependencies.store.readStream(streamId))).find(
      (recorded) => recorded.eventId === eventId,
    );
    assert(stored, `the store answered an append of ${eventId} it does not hold`);
    if (!isSameTopUp(stored.data, data)) throw new IdempotencyKeyReusedError();
  }
  return readBackRecorded(async () => {
    await dependencies.waiter.waitFor(
      position,
      [balancesProjection.name],
      dependencies.projectionWaitTimeoutMs,
    );
    // Read after the wait: the balance includes this top-up (and anything the projection applied with it).
    return { balanceWon: await readBalanceWon(dependencies.database, topUp.account) };
  });
}

function isSameTopUp(stored: unknown, wanted: { amountWon: string; reference: string }): boolean {
  const earlier = stored as { amountWon?: unknown; reference?: unknown };
  return (
    typeof earlier.amountWon === "string" &&
    parseMoney(earlier.amountWon).eq(parseMoney(wanted.amountWon)) &&
    earlier.reference === wanted.reference
  );
}
