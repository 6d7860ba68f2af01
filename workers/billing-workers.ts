import type pg from "pg";
import type { Logger } from "pino";
import { billingLimits } from "../src/billing/billing-limits";
import { createChargeQueue } from "../src/billing/charge-queue";
import { chargeUsages } from "../src/billing/charge-usage";
import type { FxRateRefresher } from "../src/billing/fx-rate-refresh";
import { createPricingReadModel } from "../src/billing/pricing-read-model";
import type { Clock, ProjectionWaiting } from "../src/billing/projection-waiting";
import type { QueueBackend } from "../src/billing/queue-backend";
import type { EventStore } from "../src/ledger/event-store";
import { GroupCommitAppender } from "../src/ledger/group-commit-appender";
import {
  type ReconcileUsageSettings,
  type RunningWorker,
  startReconcileUsageWorker,
} from "./reconcile-usage";
import { startFxRateRefreshWorker } from "./refresh-fx-rate";
import { type PendingChargeSweepSettings, startPendingChargeSweeper } from "./sweep-pending-charges";

/** Every billing worker of one process: reconciler, sweeper, FX refresh. Run it in any number of processes. */

export interface BillingWorkersDependencies {
  backend: QueueBackend;
  store: EventStore;
  database: pg.Pool;
  waiter: ProjectionWaiting;
  refresher: FxRateRefresher;
  clock: Clock;
  logger: Logger;
  reconcile?: Partial<ReconcileUsageSettings>;
  sweep?: Partial<PendingChargeSweepSettings>;
}

export async function startBillingWorkers(
  dependencies: BillingWorkersDependencies,
): Promise<{ close(): Promise<void> }> {
  const { backend, store, database, waiter, clock, logger } = dependencies;
  const pricing = createPricingReadModel(database);
  // The charges of a job, and of concurrent jobs, share one statement and one commit (group commit).
  const appender = new GroupCommitAppender(store, billingLimits.chargeAppendBatchSizeMax);
  const chargeStore = {
    readStream: (streamId: string) => store.readStream(streamId),
    readStreams: (streamIds: readonly string[]) => store.readStreams(streamIds),
    append: appender.append.bind(appender),
  };
  const running: RunningWorker[] = [];
  // The sweeper's producer may wait for the queue: it runs in a job, not on a request.
  const chargeQueue = createChargeQueue({ backend, logger, role: "background" });
  try {
    running.push(
      startReconcileUsageWorker({
        backend,
        logger,
        chargeUsages: (requestIds) =>
          chargeUsages(
            {
              store: chargeStore,
              waiter,
              pricing,
              clock,
              projectionWaitTimeoutMs: billingLimits.chargeProjectionWaitTimeoutMs,
            },
            requestIds,
          ),
        ...(dependencies.reconcile ? { settings: dependencies.reconcile } : {}),
      }),
    );
    running.push(
      await startPendingChargeSweeper({
        backend,
        database,
        enqueueCharges: (requestIds) => chargeQueue.enqueueCharges(requestIds),
        clock,
        logger,
        ...(dependencies.sweep ? { settings: dependencies.sweep } : {}),
      }),
    );
    running.push(
      await startFxRateRefreshWorker({ backend, database, refresher: dependencies.refresher, clock, logger }),
    );
  } catch (error) {
    await closeAll(running, chargeQueue);
    throw error;
  }
  return { close: () => closeAll(running, chargeQueue) };
}

async function closeAll(
  running: readonly RunningWorker[],
  chargeQueue: { close(): Promise<void> },
): Promise<void> {
  await Promise.all(running.map((worker) => worker.close()));
  await chargeQueue.close();
}
