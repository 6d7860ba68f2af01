import { UnrecoverableError } from "bullmq";
import type pg from "pg";
import type { Logger } from "pino";
import type { Clock } from "../src/billing/commands/projection-waiting";
import { type FxRateRefresher, isFxRefreshNeeded } from "../src/billing/fx/fx-rate-refresh";
import { KoreaeximError, KoreaeximResultCodeError } from "../src/billing/fx/koreaexim-errors";
import { closeWithin } from "../src/billing/queue/charge-queue";
import { openQueue, openWorker, type QueueBackend } from "../src/billing/queue/queue-backend";
import type { PeriodicLeader } from "../src/database/periodic-leader";
import { billingLimits } from "../src/kernel/limits";
import {
  fxRefreshJobSchedulerId,
  fxRefreshSchedule,
  seoulDateOf,
  startInstantOfSeoulDate,
} from "../src/kernel/seoul-calendar";
import { errorSummaryOf, throttledLog } from "../src/kernel/throttled-log";
import type { RunningWorker } from "./reconcile-usage";

/**
 * The daily FX refresh (C7): a BullMQ job scheduler at 00:05 Asia/Seoul, plus a refresh when today (Seoul)
 * has no rate. A failed refresh records nothing — today keeps the latest earlier rate — and is retried with
 * backoff a few times; a refusal by the bank (result ≠ 1, e.g. a bad authkey) is not.
 *
 * The schedule lives in the queue's store, which can lose its data (Redis flushed or restarted empty). So
 * the leader of the worker processes (periodic-leader.ts) re-asserts it every few tens of seconds
 * (upserting an unchanged scheduler changes nothing), and at the same pace enqueues today's refresh when
 * today still has no rate after 00:05 — which is the start-up refresh, and also a 00:05 run lost with the
 * store's data. That job's id is the day, and a failed one is kept for a day, so the bank is asked once a
 * day however often the check runs (unless the store loses the job again).
 */

export const fxRateRefreshesQueueName = "fx-rate-refreshes";
const refreshJobName = "refresh-fx-rate";
export const fxRefreshActor = "system:fx-refresh";
export const fxRefreshScheduleTaskName = "fx-rate-refresh-schedule";
/** The Seoul wall-clock minute of the daily refresh (00:05). */
const dailyRefreshMinuteOfDay = 5;

export interface FxRateRefreshWorkerDependencies {
  backend: QueueBackend;
  database: Pick<pg.Pool, "query">;
  refresher: FxRateRefresher;
  clock: Clock;
  logger: Logger;
  leader: Pick<PeriodicLeader, "every">;
  /** Default `billingLimits.fxScheduleCheckIntervalMs`. */
  scheduleCheckIntervalMs?: number;
}

export async function startFxRateRefreshWorker(
  dependencies: FxRateRefreshWorkerDependencies,
): Promise<RunningWorker> {
  const logger = dependencies.logger.child({ worker: fxRateRefreshesQueueName });
  const errors = throttledLog(logger, billingLimits.queueErrorLogIntervalMs);
  const queue = openQueue(fxRateRefreshesQueueName, dependencies.backend, {
    role: "background",
    defaultJobOptions: {
      attempts: billingLimits.fxRefreshJobAttemptsMax,
      backoff: { type: "exponential", delay: billingLimits.fxRefreshJobBackoffInitialMs },
      removeOnComplete: true,
      removeOnFail: true,
    },
  });
  queue.on("error", (error) => errors.error({ err: errorSummaryOf(error) }, "FX queue connection error"));

  const worker = openWorker(
    fxRateRefreshesQueueName,
    async (job) => {
      try {
        const outcome = await dependencies.refresher.refresh({
          actor: fxRefreshActor,
          correlationId: `job-${job.id}`,
        });
        if (outcome.kind === "not-configured")
          logger.info("no KOREAEXIM_AUTHKEY: FX rates come from the admin API only");
        return outcome.kind;
      } catch (error) {
        if (error instanceof KoreaeximResultCodeError) throw new UnrecoverableError(error.message);
        throw error;
      }
    },
    dependencies.backend,
    { concurrency: 1 },
  );
  worker.on("error", (error) => errors.error({ err: errorSummaryOf(error) }, "FX worker connection error"));
  worker.on("failed", (_job, error) => {
    // Korea Eximbank errors carry only dates, codes and statuses: safe to log whole (see koreaexim-errors.ts).
    const known = error instanceof KoreaeximError || error instanceof UnrecoverableError;
    logger.error(
      { err: errorSummaryOf(error), known },
      "FX refresh failed: nothing recorded, today keeps the latest earlier rate",
    );
  });

  dependencies.leader.every(
    fxRefreshScheduleTaskName,
    dependencies.scheduleCheckIntervalMs ?? billingLimits.fxScheduleCheckIntervalMs,
    async () => {
      await queue.upsertJobScheduler(fxRefreshJobSchedulerId, fxRefreshSchedule, { name: refreshJobName });
      const now = dependencies.clock();
      const today = seoulDateOf(now);
      const minutesIntoToday = (now.getTime() - startInstantOfSeoulDate(today).getTime()) / 60_000;
      if (minutesIntoToday < dailyRefreshMinuteOfDay || !dependencies.refresher.configured) return;
      if (!(await isFxRefreshNeeded(dependencies.database, today))) return;
      // One id per day: any number of checks (and of leaders) enqueue one refresh a day.
      const kept = { age: billingLimits.fxRefreshFailedJobKeptSeconds };
      await queue.add(
        refreshJobName,
        {},
        { jobId: `refresh-${today}`, removeOnComplete: kept, removeOnFail: kept },
      );
    },
  );
  return {
    close: async (force = false) => {
      await closeWithin({ close: () => worker.close(force) }, billingLimits.queueCloseTimeoutMs);
      await closeWithin(queue, billingLimits.queueCloseTimeoutMs);
    },
  };
}
