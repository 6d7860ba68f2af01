import type pg from "pg";
import type { Logger } from "pino";
import type { Clock } from "../src/billing/commands/projection-waiting";
import type { HoldRowCompletion } from "../src/billing/holds/hold-row-completion";
import {
  HeartbeatWatch,
  type OrphanHoldSettlementOptions,
  settleOrphanHolds,
} from "../src/billing/holds/orphan-hold-settlement";
import type { SettledHoldsLog } from "../src/billing/holds/settled-holds-log";
import type { SweptHoldReserves } from "../src/billing/holds/swept-hold-reserves";
import type { ChargeQueue } from "../src/billing/queue/charge-queue";
import type { PricingReadModel } from "../src/billing/read-models/pricing-read-model";
import type { PeriodicLeader } from "../src/database/periodic-leader";
import { billingLimits, defaultSettlementTimings } from "../src/kernel/limits";
import { throttledLog } from "../src/kernel/throttled-log";
import type { EventStore } from "../src/ledger/store/event-store";

/**
 * The orphan-hold sweep (C10), one of the leader's periodic tasks: every interval, the holds of gateway
 * processes presumed dead (and holds past their lifetime) are settled as interrupted usage and charged.
 * A dead gateway's hold is settled within `presumedDeadAfterMs` + `intervalMs` of its last heartbeat, once
 * the sweeper has watched the heartbeats for a whole `presumedDeadAfterMs` (after its start, a database
 * outage, or taking the lead).
 */

export const orphanHoldSweepTaskName = "orphan-hold-sweep";

export interface OrphanHoldSweepSettings extends OrphanHoldSettlementOptions {
  intervalMs: number;
}

export const orphanHoldSweepSettings: OrphanHoldSweepSettings = {
  intervalMs: defaultSettlementTimings.orphanSweepIntervalMs,
  presumedDeadAfterMs: defaultSettlementTimings.presumedDeadAfterMs,
  observationGapMaxMs: defaultSettlementTimings.observationGapMaxMs,
  holdAgeMinMs: billingLimits.orphanHoldAgeMinMs,
  holdsPerSweepMax: billingLimits.orphanHoldsPerSweepMax,
  // Kept back as long as a hold lasts unrenewed: the upstream's timeout, and a minute to settle.
  reserveMs: defaultSettlementTimings.holdLifetimeMs,
};

export function scheduleOrphanHoldSettlement(
  leader: Pick<PeriodicLeader, "every">,
  dependencies: {
    database: Pick<pg.Pool, "query">;
    completion: Pick<HoldRowCompletion, "completeSwept">;
    reserves: Pick<SweptHoldReserves, "reserve" | "release" | "releaseEnded">;
    log: Pick<SettledHoldsLog, "settled">;
    store: Pick<EventStore, "readStreams" | "append">;
    pricing: PricingReadModel;
    queue: Pick<ChargeQueue, "enqueueCharges">;
    clock: Clock;
    logger: Logger;
    settings?: Partial<OrphanHoldSweepSettings>;
  },
): void {
  const settings = { ...orphanHoldSweepSettings, ...dependencies.settings };
  const logger = dependencies.logger.child({ task: orphanHoldSweepTaskName });
  // Every sweep meets an unpriceable hold again until an operator prices its model: one line per interval.
  const unpriceableErrors = throttledLog(logger, billingLimits.queueErrorLogIntervalMs);
  // One watch per term of leadership: a new leader has seen nothing yet (the task starts with the term).
  let watch: HeartbeatWatch | undefined;
  let term: AbortSignal | undefined;
  leader.every(orphanHoldSweepTaskName, settings.intervalMs, async (signal) => {
    if (term !== signal) {
      term = signal;
      watch = new HeartbeatWatch(settings.observationGapMaxMs);
    }
    const { settledCount, unpriceable } = await settleOrphanHolds(
      {
        database: dependencies.database,
        completion: dependencies.completion,
        reserves: dependencies.reserves,
        log: dependencies.log,
        store: dependencies.store,
        pricing: dependencies.pricing,
        enqueueCharges: async (requestIds) => {
          await dependencies.queue.enqueueCharges(requestIds);
        },
        clock: dependencies.clock,
      },
      settings,
      watch!,
    );
    if (settledCount > 0) logger.warn({ settledCount }, "orphaned holds settled as interrupted usage");
    if (unpriceable.length > 0)
      unpriceableErrors.error(
        { requestIds: unpriceable },
        "these orphaned holds' models have no price at their start; they stay held until an operator sets one",
      );
    else unpriceableErrors.recovered("every orphaned hold could be priced again");
  });
}
