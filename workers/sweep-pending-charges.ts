import type pg from "pg";
import type { Logger } from "pino";
import type { Clock } from "../src/billing/commands/projection-waiting";
import type { ChargeQueue } from "../src/billing/queue/charge-queue";
import { sweepPendingCharges } from "../src/billing/queue/pending-charge-sweep";
import type { PeriodicLeader } from "../src/database/periodic-leader";
import { billingLimits } from "../src/kernel/limits";

/**
 * The sweeper: every interval, in the one worker process that leads (see periodic-leader.ts), it enqueues
 * again every usage still uncharged after the pending age — those whose enqueue was lost while the queue
 * was down, whose job vanished with the queue's data, or whose job failed for good. A timer under a
 * PostgreSQL lock, not a BullMQ schedule: it must keep running when the queue's store loses its data.
 *
 * Not flooding the queue: the sweeper remembers the jobs it enqueued and does not enqueue a usage again
 * while its job is still queued. A usage whose gateway job is still queued (a backlog older than the
 * pending age) gets one extra job at most; charges are idempotent, so that costs a read, not money.
 */

export const pendingChargeSweepTaskName = "pending-charge-sweep";

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
  database: Pick<pg.Pool, "query">;
  /** The usage-charges queue; its producer may wait (it runs in the background, not on a request). */
  queue: Pick<ChargeQueue, "enqueueCharges" | "queuedJobIds">;
  clock: Clock;
  logger: Logger;
  settings?: Partial<PendingChargeSweepSettings>;
}

/** One sweep; answers how many usages it enqueued. Keeps the jobs it enqueued between calls. */
export type PendingChargeSweep = () => Promise<number>;

export function createPendingChargeSweep(dependencies: PendingChargeSweeperDependencies): PendingChargeSweep {
  const settings = { ...pendingChargeSweepSettings, ...dependencies.settings };
  /** Request id → the sweeper's job that carries it, while that job may still be queued. */
  const outstanding = new Map<string, string>();

  async function forgetJobsThatLeftTheQueue(): Promise<void> {
    if (outstanding.size === 0) return;
    const jobIds = [...new Set(outstanding.values())];
    const queued = await dependencies.queue.queuedJobIds(jobIds);
    for (const [requestId, jobId] of outstanding) if (!queued.has(jobId)) outstanding.delete(requestId);
  }

  return async () => {
    await forgetJobsThatLeftTheQueue();
    let enqueuedCount = 0;
    await sweepPendingCharges(
      dependencies.database,
      async (requestIds) => {
        const unqueued = requestIds.filter((requestId) => !outstanding.has(requestId));
        const jobs = await dependencies.queue.enqueueCharges(unqueued);
        for (const job of jobs) for (const requestId of job.requestIds) outstanding.set(requestId, job.jobId);
        enqueuedCount += unqueued.length;
      },
      {
        now: dependencies.clock(),
        ageMs: settings.ageMs,
        pageSize: settings.pageSize,
        pagesMax: settings.pagesMax,
      },
    );
    return enqueuedCount;
  };
}

/** Registers the sweep with the leader; it runs in whichever worker process leads. */
export function schedulePendingChargeSweep(
  leader: Pick<PeriodicLeader, "every">,
  dependencies: PendingChargeSweeperDependencies,
): void {
  const settings = { ...pendingChargeSweepSettings, ...dependencies.settings };
  const logger = dependencies.logger.child({ task: pendingChargeSweepTaskName });
  const sweep = createPendingChargeSweep(dependencies);
  leader.every(pendingChargeSweepTaskName, settings.intervalMs, async () => {
    const enqueuedCount = await sweep();
    if (enqueuedCount > 0) logger.warn({ enqueuedCount }, "uncharged usage found and enqueued again");
  });
}
