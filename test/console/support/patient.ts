import { randomUUID } from "node:crypto";
import { expect } from "vitest";
import { balancesProjection } from "../../../projections/balances";
import type { GatewayHarness } from "../../support/gateway-harness";

/**
 * The console tests share two cores with the rest of the suite; what they wait for (a charge, a projection, a
 * re-render) may take seconds under load, so they wait up to this long rather than vitest's 1 s default.
 */
export const patienceMs = 20_000;

export function poll<T>(read: () => Promise<T> | T, message?: string) {
  return expect.poll(read, {
    timeout: patienceMs,
    interval: 100,
    ...(message === undefined ? {} : { message }),
  });
}

/** A top-up appended to the ledger, waiting as long as the suite's load needs for the balance to show it. */
export async function topUp(
  harness: GatewayHarness,
  account: { kind: "user" | "organization"; id: string },
  amountWon: string,
): Promise<void> {
  const appended = await harness.service.ledger.store.append({
    streamId: `account-${account.kind}-${account.id}`,
    expectedVersion: "any",
    events: [
      {
        eventId: randomUUID(),
        event: {
          type: "CreditToppedUp",
          data: { account, amountWon, reference: "console test" },
          metadata: { actor: "admin", occurredAt: new Date().toISOString() },
        },
      },
    ],
  });
  await harness.service.waiter.waitFor(appended.position, [balancesProjection.name], patienceMs);
}
