import { assert } from "../kernel/assert";
import { Money } from "../kernel/money";

/**
 * The invariants money rests on, asserted where they must hold (TigerBeetle's two-phase transfers: a pending
 * transfer never above what was available, a post never releasing more than its pending one). A broken one
 * is a programmer error, in this code or in the SQL beside it: the work stops loudly instead of billing
 * wrongly.
 *
 * Not invariants, so never asserted: a usage costing more than its hold (a request naming no maximum output,
 * a hold cut to what was available, a fallback model: the overdraft bound of docs/billing.md), an account's
 * available funds below zero (that same bound), and a correction's amounts, which are signed differences.
 */

/** An amount that cannot be negative: a hold, an estimate, a first usage's pending cost, a first charge, a top-up. */
export function assertWonNotNegative(amountWon: string | Money, what: string): void {
  assert(!new Money(amountWon).isNegative(), `${what} must not be negative, not ${amountWon}`);
}

/**
 * A granted hold (`ledger_authorize_usage`) is at most what its account had available to it — the funds it
 * was taken against, after the holds granted before it in its batch — and at most its estimate, and is
 * granted only with at least ₩1 available.
 */
export function assertHoldWithinFunds(
  hold: { holdWon: string; availableWon: string; estimatedWon: string },
  requestId: string,
): void {
  const { holdWon, availableWon, estimatedWon } = hold;
  assertWonNotNegative(holdWon, `the hold of ${requestId}`);
  assert(
    new Money(holdWon).lte(availableWon),
    `the hold of ${requestId} (${holdWon}) is above the funds it was taken against (${availableWon})`,
  );
  assert(
    new Money(holdWon).lte(estimatedWon),
    `the hold of ${requestId} (${holdWon}) is above its estimate (${estimatedWon})`,
  );
  assert(
    new Money(availableWon).gte(1),
    `the hold of ${requestId} was granted with less than ₩1 available (${availableWon})`,
  );
}

/** A hold refused for funds had less than ₩1 available to it; with more it would have been granted. */
export function assertRefusedForFunds(availableWon: string, requestId: string): void {
  assert(
    new Money(availableWon).lt(1),
    `the hold of ${requestId} was refused for funds with ${availableWon} available`,
  );
}

/**
 * A settlement releases exactly its hold, never more (nor less, which would leave money held for good): a
 * first usage's `heldWon`, a void's `releasedWon`. What the usage costs may differ; that is not released
 * from the hold but moved to pending.
 */
export function assertReleasesItsHold(releasedWon: string, holdWon: string, what: string): void {
  assert(new Money(releasedWon).eq(holdWon), `${what} releases ${releasedWon}, not its hold of ${holdWon}`);
}

/** Versions of one stream as read: 0, 1, 2… with no gap, so the last one is what the next append expects. */
export function assertContiguousVersions(
  stream: readonly { streamVersion: number }[],
  streamId: string,
): void {
  for (const [index, event] of stream.entries())
    assert(
      event.streamVersion === index,
      `${streamId} holds version ${event.streamVersion} at position ${index}: a stream's versions run 0, 1, 2…`,
    );
}
