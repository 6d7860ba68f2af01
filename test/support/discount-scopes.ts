import { randomUUID } from "node:crypto";
import { expect } from "vitest";
import { discountStreamIdOf } from "../../src/billing/commands/set-discount";
import type { EventStore } from "../../src/ledger/store/event-store";

/**
 * `count` organization scopes (`organizationIdOf(0)`, …), one 0.01 rule each, taking effect a millisecond
 * apart from `firstAt` (epoch ms), appended in one batch: more scopes than the discount history reads at once.
 */
export async function appendDiscountScopes(
  store: EventStore,
  options: { count: number; firstAt: number; organizationIdOf: (index: number) => string },
): Promise<void> {
  const results = await store.appendBatch(
    Array.from({ length: options.count }, (_unused, index) => ({
      streamId: discountStreamIdOf({ model: null, organizationId: options.organizationIdOf(index) }),
      expectedVersion: "no-stream" as const,
      events: [
        {
          eventId: randomUUID(),
          event: {
            type: "DiscountSet" as const,
            data: { model: null, organizationId: options.organizationIdOf(index), rate: "0.01" },
            metadata: { actor: "admin", occurredAt: new Date(options.firstAt + index).toISOString() },
          },
        },
      ],
    })),
  );
  expect(results.filter((result) => result.status === "rejected")).toEqual([]);
}
