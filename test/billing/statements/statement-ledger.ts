import { randomUUID } from "node:crypto";
import type { AccountReference } from "../../../src/ledger/events";
import type { StreamAppend } from "../../../src/ledger/store/event-store";

/**
 * Given-events for statement tests: top-ups with their reference, and usages with their own key and model,
 * at fixed instants (written with their Seoul wall clock beside them where a month boundary matters).
 */

export function topUpAt(
  account: AccountReference,
  amountWon: string,
  reference: string,
  occurredAt: string,
): StreamAppend {
  return {
    streamId: `account-${account.kind}-${account.id}`,
    expectedVersion: "any",
    events: [
      {
        eventId: randomUUID(),
        event: {
          type: "CreditToppedUp",
          data: { account, amountWon, reference },
          metadata: { actor: "admin", occurredAt },
        },
      },
    ],
  };
}

export interface StatementUsage {
  requestId: string;
  account: AccountReference;
  keyId: string;
  model: string;
  startedAt: string;
  tokens: { input: number; cached: number | null; output: number; reasoning: number | null };
}

export function usageAt(usage: StatementUsage): StreamAppend {
  return {
    streamId: `usage-${usage.requestId}`,
    expectedVersion: "no-stream",
    events: [
      {
        eventId: randomUUID(),
        event: {
          type: "UsageRecorded",
          data: {
            requestId: usage.requestId,
            keyId: usage.keyId,
            account: usage.account,
            userId: usage.account.kind === "user" ? usage.account.id : "member",
            organizationId: usage.account.kind === "organization" ? usage.account.id : null,
            model: usage.model,
            endpoint: "chat.completions",
            streamed: false,
            outcome: "completed",
            tokens: usage.tokens,
            usageSource: "upstream",
            startedAt: usage.startedAt,
          },
          metadata: {
            actor: `key:${usage.keyId}`,
            correlationId: usage.requestId,
            occurredAt: usage.startedAt,
          },
        },
      },
    ],
  };
}
