import { randomUUID } from "node:crypto";
import { billingHistoryProjection } from "../../../projections/billing-history";
import { usageByDayProjection } from "../../../projections/usage-by-day";
import type { AccountReference, LedgerEvent } from "../../../src/ledger/events";
import type { StreamAppend } from "../../../src/ledger/store/event-store";
import { compareLogPositions, type LogPosition, logStart } from "../../../src/ledger/store/log-position";
import type { GatewayHarness } from "../../support/gateway-harness";
import { patienceMs } from "./patient";

/**
 * Many charges of one account appended straight to the ledger, as the charge worker writes them (usage
 * recorded and charged in one append), in batches, then projected: thousands of charges in seconds where
 * thousands of generations through HTTP would take minutes. Deterministic: the same count, the same charges.
 */

export interface SeededCharge {
  requestId: string;
  model: string;
  startedAt: string;
  amountWon: string;
}

const models = ["alpha-5.4-mini", "beta-3-flash", "delta-4.6-sonnet"] as const;
const appendsPerBatch = 500;

export async function appendCharges(
  harness: GatewayHarness,
  options: {
    account: AccountReference;
    keyId: string;
    count: number;
    newestStartMs: number;
    spacingMs: number;
  },
): Promise<SeededCharge[]> {
  const charges: SeededCharge[] = Array.from({ length: options.count }, (_unused, index) => ({
    requestId: `req_seeded_${String(index).padStart(6, "0")}`,
    model: models[index % models.length]!,
    startedAt: new Date(options.newestStartMs - index * options.spacingMs).toISOString(),
    amountWon: `${1 + (index % 40)}.${String((index * 7919) % 1_000_000).padStart(6, "0")}`,
  }));
  let lastPosition: LogPosition = logStart;
  for (let first = 0; first < charges.length; first += appendsPerBatch) {
    const appends = charges
      .slice(first, first + appendsPerBatch)
      .map((charge) => chargeAppend(options, charge));
    for (const outcome of await harness.service.ledger.store.appendBatch(appends)) {
      if (outcome.status === "rejected") throw outcome.reason;
      if (compareLogPositions(outcome.value.position, lastPosition) > 0)
        lastPosition = outcome.value.position;
    }
  }
  await harness.service.waiter.waitFor(
    lastPosition,
    [billingHistoryProjection.name, usageByDayProjection.name],
    patienceMs * 3,
  );
  return charges;
}

function chargeAppend(
  options: { account: AccountReference; keyId: string },
  charge: SeededCharge,
): StreamAppend {
  const tokens = { input: 1_000, cached: 0, output: 200, reasoning: 0 };
  const common = {
    requestId: charge.requestId,
    keyId: options.keyId,
    account: options.account,
    model: charge.model,
    endpoint: "chat.completions" as const,
    startedAt: charge.startedAt,
  };
  const metadata = { actor: "system:charge-worker", occurredAt: charge.startedAt };
  const events: LedgerEvent[] = [
    {
      type: "UsageRecorded",
      data: {
        ...common,
        userId: options.account.kind === "user" ? options.account.id : null,
        organizationId: options.account.kind === "organization" ? options.account.id : null,
        streamed: false,
        outcome: "completed",
        tokens,
        usageSource: "upstream",
      },
      metadata,
    },
    {
      type: "UsageCharged",
      data: {
        ...common,
        amountWon: charge.amountWon,
        breakdown: {
          tokens,
          inputUsdPerMillionTokens: "1.25",
          cachedInputUsdPerMillionTokens: "0.125",
          outputUsdPerMillionTokens: "10",
          usd: "0.00325",
          fxRateKrwPerUsd: "1400",
          fxRateDate: charge.startedAt.slice(0, 10),
          discountRate: "0",
          amountWon: charge.amountWon,
          usageSource: "upstream",
        },
      },
      metadata,
    },
  ];
  return {
    streamId: `usage-${charge.requestId}`,
    expectedVersion: "no-stream",
    events: events.map((event) => ({ eventId: randomUUID(), event })),
  };
}
