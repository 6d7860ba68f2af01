import { discountsProjection } from "../../../projections/discounts";
import { fxRatesProjection } from "../../../projections/fx-rates";
import { pricesProjection } from "../../../projections/prices";
import { type AccountReference, parseLedgerEvent } from "../../ledger/events";
import {
  type EventStore,
  type RecordedEvent,
  type RecordedEventOf,
  WrongExpectedVersionError,
} from "../../ledger/store/event-store";
import { compareLogPositions, type LogPosition } from "../../ledger/store/log-position";
import { billingMetrics } from "../../operations/billing-metrics";
import { keyKindLabelOf } from "../../operations/metric-labels";
import { usageChargedEventId } from "../commands/deterministic-event-id";
import type { Clock, ProjectionWaiting } from "../commands/projection-waiting";
import {
  type PricingInForce,
  type PricingReadModel,
  PricingUnavailableError,
} from "../read-models/pricing-read-model";
import { calculateCharge } from "./charge-calculation";
import { recordedBreakdownOf, tokenCountsForPricing } from "./recorded-charge-breakdown";

/**
 * ChargeUsage: the command the reconciler runs for each request. It turns the request's `UsageRecorded`
 * into exactly one `UsageCharged` in the same stream, however often it runs and however many workers run
 * it at once:
 * - the charge is appended right after the usage (expected version: the usage's), so a second charge of the same
 *   usage is refused by the store (WrongExpectedVersion = someone else charged it: success);
 * - its event id is derived from the request id, so a retry of an append whose answer was lost is
 *   recognised by the store as the same event.
 */

export const usageStreamIdOf = (requestId: string) => `usage-${requestId}`;
export const reconcilerActor = "system:reconciler";

/** The projections a charge reads; it waits until they have applied the usage's position. */
export const pricingProjectionNames = [
  pricesProjection.name,
  discountsProjection.name,
  fxRatesProjection.name,
] as const;

export interface ChargeUsageDependencies {
  /** `append` may be a group-commit appender: many workers' charges then share one commit. */
  store: Pick<EventStore, "readStream" | "readStreams" | "append">;
  waiter: ProjectionWaiting;
  pricing: PricingReadModel;
  clock: Clock;
  projectionWaitTimeoutMs: number;
}

/**
 * `charged`: this run's append is in the ledger — appended now, or recognised by the store as identical to
 * one a concurrent run stored a moment earlier (same derived event id). Either way there is one charge.
 * `already-charged`: the stream held the charge before this run appended anything.
 */
export type ChargeUsageOutcome =
  | { kind: "charged"; amountWon: string; position: LogPosition }
  | { kind: "already-charged" };

/** The usage stream holds no `UsageRecorded`: the job names a request that was never recorded. */
export class UsageNotRecordedError extends Error {
  override readonly name = "UsageNotRecordedError";
  constructor(readonly requestId: string) {
    super(`no UsageRecorded in stream ${usageStreamIdOf(requestId)}`);
  }
}

/** Whose discount applies: an organization key's organization; a personal key matches only "any" (C7). */
export function discountOrganizationOf(account: AccountReference): string | null {
  return account.kind === "organization" ? account.id : null;
}

export async function chargeUsage(
  dependencies: ChargeUsageDependencies,
  requestId: string,
): Promise<ChargeUsageOutcome> {
  const outcome = (await chargeUsages(dependencies, [requestId])).get(requestId)!;
  if (outcome.status === "rejected") throw outcome.reason;
  return outcome.value;
}

/**
 * ChargeUsage for many requests at once, each with its own outcome: one read of all their streams, one
 * pricing query, and appends that a group-commit appender writes in one statement. Each charge keeps its
 * own stream, expected version and derived event id, so exactly-once holds for each as it does alone.
 */
export async function chargeUsages(
  dependencies: ChargeUsageDependencies,
  requestIds: readonly string[],
): Promise<Map<string, PromiseSettledResult<ChargeUsageOutcome>>> {
  const outcomes = new Map<string, PromiseSettledResult<ChargeUsageOutcome>>();
  const settle = (requestId: string, outcome: ChargeUsageOutcome) =>
    outcomes.set(requestId, { status: "fulfilled", value: outcome });
  const fail = (requestId: string, reason: unknown) =>
    outcomes.set(requestId, { status: "rejected", reason });

  const distinct = [...new Set(requestIds)];
  const streams = await dependencies.store.readStreams(distinct.map(usageStreamIdOf));
  const toCharge: RecordedEventOf<"UsageRecorded">[] = [];
  for (const requestId of distinct) {
    const streamId = usageStreamIdOf(requestId);
    const stream = streams.get(streamId) ?? [];
    if (hasCharge(stream)) {
      settle(requestId, { kind: "already-charged" });
      continue;
    }
    const usage = stream.find(
      (event): event is RecordedEventOf<"UsageRecorded"> => event.type === "UsageRecorded",
    );
    if (usage === undefined) fail(requestId, new UsageNotRecordedError(requestId));
    // The stream is (UsageAuthorized?, UsageRecorded) and the charge goes right after the usage; any other
    // shape is a bug upstream.
    else if (usage !== stream[stream.length - 1] || !isUsageStreamHead(stream.slice(0, -1))) {
      fail(
        requestId,
        new Error(
          `stream ${streamId} is not a usage stream: ${stream.map((event) => event.type).join(", ")}`,
        ),
      );
    } else toCharge.push(usage);
  }
  if (toCharge.length === 0) return outcomes;

  // Read-your-writes on the pricing side: a price set before the request started is always seen.
  const latest = toCharge.reduce((found, usage) =>
    compareLogPositions(usage.position, found.position) > 0 ? usage : found,
  );
  await dependencies.waiter.waitFor(
    latest.position,
    pricingProjectionNames,
    dependencies.projectionWaitTimeoutMs,
  );
  const pricings = await dependencies.pricing.pricingEachAt(
    toCharge.map((usage) => ({
      model: usage.data.model,
      organizationId: discountOrganizationOf(usage.data.account),
      startedAt: new Date(usage.data.startedAt),
    })),
  );
  await Promise.all(
    toCharge.map(async (usage, index) => {
      const pricing = pricings[index]!;
      if (pricing instanceof PricingUnavailableError) {
        fail(usage.data.requestId, pricing);
        return;
      }
      try {
        settle(usage.data.requestId, await appendCharge(dependencies, usage, pricing));
      } catch (error) {
        fail(usage.data.requestId, error);
      }
    }),
  );
  return outcomes;
}

async function appendCharge(
  dependencies: ChargeUsageDependencies,
  usage: RecordedEventOf<"UsageRecorded">,
  pricing: PricingInForce,
): Promise<ChargeUsageOutcome> {
  const requestId = usage.data.requestId;
  const breakdown = calculateCharge({
    tokens: tokenCountsForPricing(usage.data.tokens),
    unitPrices: pricing.unitPrices,
    fxRate: pricing.fxRate,
    discountRate: pricing.discount.rate,
  });
  const charged = parseLedgerEvent({
    type: "UsageCharged",
    data: {
      requestId,
      keyId: usage.data.keyId,
      account: usage.data.account,
      model: usage.data.model,
      endpoint: usage.data.endpoint,
      startedAt: usage.data.startedAt,
      amountWon: breakdown.amountWon,
      breakdown: recordedBreakdownOf(breakdown, usage.data.tokens, usage.data.usageSource),
      // What recording the usage put in pending is taken out again, whatever the charge comes to (C10).
      releasedPendingWon: usage.data.pendingWon ?? null,
    },
    metadata: {
      actor: reconcilerActor,
      correlationId: requestId,
      causationId: usage.eventId,
      occurredAt: dependencies.clock().toISOString(),
    },
  });
  try {
    const appended = await dependencies.store.append({
      streamId: usage.streamId,
      expectedVersion: usage.streamVersion,
      events: [{ eventId: usageChargedEventId(requestId), event: charged }],
    });
    billingMetrics.observeCharge({
      model: usage.data.model,
      keyKind: keyKindLabelOf(usage.data.account.kind),
      amountWon: breakdown.amountWon,
      lagSeconds: (dependencies.clock().getTime() - usage.recordedAt.getTime()) / 1_000,
    });
    return { kind: "charged", amountWon: breakdown.amountWon, position: appended.position };
  } catch (error) {
    if (
      error instanceof WrongExpectedVersionError &&
      hasCharge(await dependencies.store.readStream(usage.streamId))
    ) {
      return { kind: "already-charged" };
    }
    throw error;
  }
}

/** What may come before a usage in its stream: nothing (usage recorded without a hold) or its hold. */
function isUsageStreamHead(head: readonly RecordedEvent[]): boolean {
  return head.length === 0 || (head.length === 1 && head[0]!.type === "UsageAuthorized");
}

function hasCharge(stream: readonly RecordedEvent[]): boolean {
  return stream.some((event) => event.type === "UsageCharged");
}
