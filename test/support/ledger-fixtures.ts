import { randomUUID } from "node:crypto";
import type { EventMetadata } from "../../src/ledger/events";
import type { EventToAppend } from "../../src/ledger/store/event-store";

export const fixedInstant = "2026-11-20T03:00:00.000Z";

export function metadata(overrides: Partial<EventMetadata> = {}): EventMetadata {
  return { actor: "admin", occurredAt: fixedInstant, ...overrides };
}

/** A small valid event for store tests: a top-up whose reference says where it came from. */
export function topUp(
  accountId: string,
  amountWon: string,
  reference: string,
  eventId = randomUUID(),
): EventToAppend {
  return {
    eventId,
    event: {
      type: "CreditToppedUp",
      data: { account: { kind: "user", id: accountId }, amountWon, reference },
      metadata: metadata(),
    },
  };
}
