import { randomUUID } from "node:crypto";
import type { AccountReference, ApiKeyLimits, EventData, EventMetadata } from "../../src/ledger/events";
import type { EventToAppend, StreamAppend } from "../../src/ledger/store/event-store";

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

/** A key's limits set on its stream (`apikey-<uuid>`), any limit left out none. */
export function keyLimitsSet(
  keyId: string,
  owner: AccountReference,
  limits: Partial<ApiKeyLimits>,
  eventMetadata: EventMetadata = metadata(),
): StreamAppend {
  return {
    streamId: `apikey-${keyId}`,
    expectedVersion: "any",
    events: [
      {
        eventId: randomUUID(),
        event: {
          type: "ApiKeyLimitsSet",
          data: {
            keyId,
            owner,
            monthlySpendLimitWon: null,
            totalSpendLimitWon: null,
            rateLimitRequestsPerMinute: null,
            allowedModels: null,
            ...limits,
          },
          metadata: eventMetadata,
        },
      },
    ],
  };
}

const keyId = "5a5a5a5a-1111-4b4b-8c8c-000000000001";

/**
 * A usage's charge on its usage stream, appended at any version: the first charge of a request, or (with
 * `correction`) the charge of its corrected usage, whose breakdown is the delivered usage's whole charge.
 */
export function usageCharge(
  account: AccountReference,
  requestId: string,
  startedAt: string,
  amountWon: string,
  correction: { correctsEventId: string; correctedAmountWon: string; deliveredWon: string } | null = null,
  eventId = randomUUID(),
): StreamAppend {
  const breakdownWon = correction ? correction.deliveredWon : amountWon;
  const data: EventData<"UsageCharged"> = {
    requestId,
    keyId,
    account,
    model: "alpha-5.4",
    endpoint: "chat.completions",
    startedAt,
    amountWon,
    breakdown: {
      tokens: { input: 10, cached: null, output: 5, reasoning: null },
      inputUsdPerMillionTokens: "1",
      cachedInputUsdPerMillionTokens: "0.1",
      outputUsdPerMillionTokens: "2",
      usd: "0.00002",
      fxRateKrwPerUsd: "1400",
      fxRateDate: "2026-10-01",
      discountRate: "0",
      amountWon: breakdownWon,
      usageSource: "upstream",
    },
    releasedPendingWon: null,
    correction: correction
      ? {
          correctsEventId: correction.correctsEventId,
          correctedAmountWon: correction.correctedAmountWon,
          correctedTokens: { input: 10, cached: null, output: 5, reasoning: null },
        }
      : null,
  };
  return {
    streamId: `usage-${requestId}`,
    expectedVersion: "any",
    events: [
      {
        eventId,
        event: {
          type: "UsageCharged",
          data,
          metadata: { actor: "system:reconciler", occurredAt: startedAt },
        },
      },
    ],
  };
}
