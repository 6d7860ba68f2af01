import type pg from "pg";
import type { Logger } from "pino";
import { backgroundRetryDefaults, retryInBackground } from "../src/billing/background-retry";
import { billingLimits } from "../src/billing/billing-limits";
import { closeWithin } from "../src/billing/charge-queue";
import { sweepPendingCharges } from "../src/billing/pending-charge-sweep";
import type { Clock } from "../src/billing/projection-waiting";
import { openQueue, openWorker, type QueueBackend } from "../src/billing/queue-backend";
import { errorSummaryOf, throttledLog } from "../src/billing/throttled-log";
import type { RunningWorker } from "./reconcile-usage";

/**
 * The sweeper: a BullMQ job scheduler runs one sweep every interval (one job at a time across all worker
 * processes, whatever their number); the sweep enqueues again every usage still uncharged after the
 * pending age — those whose enqueue was lost while the queue was down, or whose job failed for good.
 */

export const pendingChargeSweepsQueueName = "pending-charge-sweeps";
export const pendingChargeSweepSchedulerId = "pending-charge-sweep";
const sweepJobName = "sweep-pending-charges";

export interface PendingChargeSweepSettings {
  intervalMs: number;
  ageMs: number;
  pageSize: number;
  pagesMax: number;
}

export const pendingChargeSweepSettings: PendingChargeSweepSettings = {
  intervalMs: billingLimits.pendingChargeSweepIntervalMs,
  ageMs: billingLimits.pendingChargeAgeMs,
  pageSize: billingLimits.pendingChargeSweepPageSize,
  pagesMax: billingLimits.pendingChargeSweepPagesMax,
};

export interface PendingChargeSweeperDependencies {
  backend: QueueBackend;
  database: Pick<pg.Pool, "query">;
  /** Enqueues on the usage-charges queue and waits for the queue's answer. */
  enqueueCharges: (requestIds: readonly string[]) => Promise<void>;
  clock: Clock;
  logger: Logger;
  settings?: Partial<PendingChargeSweepSettings>;
}

export async function startPendingChargeSweeper(
  dependencies: PendingChargeSweeperDependencies,
): Promise<RunningWorker> {
  const settings = { ...pendingChargeSweepSettings, ...dependencies.settings };
  const logger = dependencies.logger.child({ worker: pendingChargeSweepsQueueName });
  const errors = throttledLog(logger, billingLimits.queueErrorLogIntervalMs);
  const queue = openQueue(pendingChargeSweepsQueueName, dependencies.backend, {
    role: "background",
    defaultJobOptions: { removeOnComplete: true, removeOnFail: true },
  });
  queue.on("error", (error) => errors.error({ err: errorSummaryOf(error) }, "sweep queue connection error"));
  // Upserting is idempotent: every worker process does it, the schedule stays one. In the background, so
  // that a queue store down at boot does not hold the process.
  const scheduling = retryInBackground({
    ...backgroundRetryDefaults,
    description: "scheduling the pending-charge sweep",
    logger,
    task: async () => {
      await queue.upsertJobScheduler(
        pendingChargeSweepSchedulerId,
        { every: settings.intervalMs },
        { name: sweepJobName },
      );
    },
  });

  const worker = openWorker(
    pendingChargeSweepsQueueName,
    async () => {
      const { enqueuedCount } = await sweepPendingCharges(
        dependencies.database,
        dependencies.enqueueCharges,
        {
          now: dependencies.clock(),
          ageMs: settings.ageMs,
          pageSize: settings.pageSize,
          pagesMax: settings.pagesMax,
        },
      );
      if (enqueuedCount > 0) logger.warn({ enqueuedCount }, "uncharged usage found and enqueued again");
      return enqueuedCount;
    },
    dependencies.backend,
    { concurrency: 1 },
  );
  worker.on("error", (error) => errors.error({ err: errorSummaryOf(error) }, "sweeper connection error"));
  worker.on("failed", (_job, error) => logger.error({ err: errorSummaryOf(error) }, "sweep failed"));
  return {
    close: async (force = false) => {
      await scheduling.stop();
      await closeWithin({ close: () => worker.close(force) }, billingLimits.queueCloseTimeoutMs);
      await closeWithin(queue, billingLimits.queueCloseTimeoutMs);
    },
  };
}
