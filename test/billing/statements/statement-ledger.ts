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

/** A hold placed for a request started at `startedAt`, still open (no usage recorded, not voided). */
export function holdAt(usage: Omit<StatementUsage, "tokens">, holdWon: string): StreamAppend {
  return {
    streamId: `usage-${usage.requestId}`,
    expectedVersion: "no-stream",
    events: [
      {
        eventId: randomUUID(),
        event: {
          type: "UsageAuthorized",
          data: {
            requestId: usage.requestId,
            keyId: usage.keyId,
            account: usage.account,
            userId: usage.account.kind === "user" ? usage.account.id : "member",
            organizationId: usage.account.kind === "organization" ? usage.account.id : null,
            model: usage.model,
            endpoint: "chat.completions",
            streamed: true,
            startedAt: usage.startedAt,
            holdWon,
            estimate: { inputTokensMax: 1_000, outputTokensMax: 1_000, estimatedWon: holdWon },
            gatewayInstance: "statement-test-gateway",
            expiresAt: "2026-11-01T15:00:00.000Z",
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

/** The hold of `holdAt` released (the stream produced nothing). */
export function voidOf(
  usage: Pick<StatementUsage, "requestId" | "account">,
  releasedWon: string,
): StreamAppend {
  return {
    streamId: `usage-${usage.requestId}`,
    expectedVersion: 0,
    events: [
      {
        eventId: randomUUID(),
        event: {
          type: "UsageVoided",
          data: {
            requestId: usage.requestId,
            account: usage.account,
            releasedWon,
            reason: "upstream-failed",
          },
          metadata: {
            actor: "gateway",
            correlationId: usage.requestId,
            occurredAt: "2026-11-01T15:20:00.000Z",
          },
        },
      },
    ],
  };
}
