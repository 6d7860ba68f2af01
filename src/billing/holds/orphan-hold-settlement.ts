import type pg from "pg";
import { parseLedgerEvent, type UsageTokens } from "../../ledger/events";
import {
  type EventStore,
  type RecordedEventOf,
  WrongExpectedVersionError,
} from "../../ledger/store/event-store";
import { billingMetrics } from "../../operations/billing-metrics";
import { keyKindLabelOf } from "../../operations/metric-labels";
import { discountOrganizationOf, usageStreamIdOf } from "../charging/charge-usage";
import { orphanSettlementEventId } from "../commands/deterministic-event-id";
import type { PricingReadModel } from "../read-models/pricing-read-model";
import { costWonOf } from "./hold-pricing";

/**
 * Settles orphaned holds (C10): holds whose gateway process stopped beating (it died mid-request, or
 * stopped before writing every settlement), and holds past their lifetime. Each is settled with a
 * `UsageRecorded` of outcome `interrupted` and source `estimated`, at version 1 of its stream — where the
 * gateway's own settlement would go, so whichever comes first is the only one — and its charge enqueued.
 *
 * What is known of an orphan is its hold: the request body's size and the output it allowed. The input is
 * estimated at four bytes a token (the bytes bound the tokens from above, and four is the usual ratio); the
 * output is not known — a process that died took its count with it — and is recorded as 0.
 */

export const orphanSettlementActor = "system:orphan-hold-sweep";
const bytesPerEstimatedToken = 4;

export interface OrphanHoldSettlementOptions {
  /** A process whose heartbeat is older than this is presumed dead. */
  presumedDeadAfterMs: number;
  /** A hold younger than this is never an orphan (its process may not have beaten yet). */
  holdAgeMinMs: number;
  /** Holds settled by one sweep. */
  holdsPerSweepMax: number;
}

export interface OrphanHoldSettlementDependencies {
  database: Pick<pg.Pool, "query">;
  store: Pick<EventStore, "readStreams" | "append">;
  pricing: PricingReadModel;
  enqueueCharges: (requestIds: readonly string[]) => Promise<void>;
  clock: () => Date;
}

export async function settleOrphanHolds(
  dependencies: OrphanHoldSettlementDependencies,
  options: OrphanHoldSettlementOptions,
): Promise<{ settledCount: number }> {
  const orphans = await dependencies.database.query<{ request_id: string }>(
    `SELECT holds.request_id FROM open_holds holds
     LEFT JOIN gateway_instances instances ON instances.instance_id = holds.gateway_instance
     WHERE holds.placed_at < now() - make_interval(secs => $1 / 1000.0)
       AND (instances.seen_at IS NULL OR instances.seen_at < now() - make_interval(secs => $2 / 1000.0)
            OR holds.expires_at < now())
     ORDER BY holds.placed_at
     LIMIT $3`,
    [options.holdAgeMinMs, options.presumedDeadAfterMs, options.holdsPerSweepMax],
  );
  if (orphans.rows.length === 0) return { settledCount: 0 };
  const requestIds = orphans.rows.map((row) => row.request_id);
  const streams = await dependencies.store.readStreams(requestIds.map(usageStreamIdOf));
  const holds = requestIds
    .map((requestId) => streams.get(usageStreamIdOf(requestId)) ?? [])
    // Only a stream that is still just its hold: anything else was settled since the query.
    .filter((stream) => stream.length === 1 && stream[0]!.type === "UsageAuthorized")
    .map((stream) => stream[0] as RecordedEventOf<"UsageAuthorized">);
  if (holds.length === 0) return { settledCount: 0 };

  const pricings = await dependencies.pricing.pricingAt(
    holds.map((hold) => ({
      model: hold.data.model,
      organizationId: discountOrganizationOf(hold.data.account),
      startedAt: new Date(hold.data.startedAt),
    })),
  );
  const settled: string[] = [];
  for (const [index, hold] of holds.entries()) {
    const tokens: UsageTokens = {
      input: Math.ceil(hold.data.estimate.inputTokensMax / bytesPerEstimatedToken),
      cached: null,
      output: 0,
      reasoning: null,
    };
    const requestId = hold.data.requestId;
    const event = parseLedgerEvent({
      type: "UsageRecorded",
      data: {
        requestId,
        keyId: hold.data.keyId,
        account: hold.data.account,
        userId: hold.data.userId,
        organizationId: hold.data.organizationId,
        model: hold.data.model,
        endpoint: hold.data.endpoint,
        streamed: hold.data.streamed,
        outcome: "interrupted",
        tokens,
        usageSource: "estimated",
        startedAt: hold.data.startedAt,
        heldWon: hold.data.holdWon,
        pendingWon: costWonOf(pricings[index]!, tokens),
      },
      metadata: {
        actor: orphanSettlementActor,
        correlationId: requestId,
        causationId: hold.eventId,
        occurredAt: dependencies.clock().toISOString(),
      },
    });
    try {
      await dependencies.store.append({
        streamId: hold.streamId,
        expectedVersion: hold.streamVersion,
        events: [{ eventId: orphanSettlementEventId(requestId), event }],
      });
      settled.push(requestId);
      billingMetrics.observeHold({
        outcome: "orphaned",
        keyKind: keyKindLabelOf(hold.data.account.kind),
        amountWon: hold.data.holdWon,
      });
    } catch (error) {
      // The gateway's own settlement came first: nothing is left to settle.
      if (!(error instanceof WrongExpectedVersionError)) throw error;
    }
  }
  if (settled.length > 0) await dependencies.enqueueCharges(settled);
  return { settledCount: settled.length };
}
