import { UnrecoverableError } from "bullmq";
import type pg from "pg";
import type { Logger } from "pino";
import { backgroundRetryDefaults, retryInBackground } from "../src/billing/background-retry";
import { billingLimits } from "../src/billing/billing-limits";
import { closeWithin } from "../src/billing/charge-queue";
import { KoreaeximError, KoreaeximResultCodeError } from "../src/billing/fx/koreaexim-errors";
import { type FxRateRefresher, isFxRefreshNeeded } from "../src/billing/fx-rate-refresh";
import type { Clock } from "../src/billing/projection-waiting";
import { openQueue, openWorker, type QueueBackend } from "../src/billing/queue-backend";
import { fxRefreshJobSchedulerId, fxRefreshSchedule, seoulDateOf } from "../src/billing/seoul-calendar";
import { errorSummaryOf, throttledLog } from "../src/billing/throttled-log";
import type { RunningWorker } from "./reconcile-usage";

/**
 * The daily FX refresh (C7): a BullMQ job scheduler at 00:05 Asia/Seoul, plus one job at start-up when
 * today (Seoul) has no rate. A failed refresh records nothing — today keeps the latest earlier rate — and
 * is retried with backoff a few times; a refusal by the bank (result ≠ 1, e.g. a bad authkey) is not.
 */

export const fxRateRefreshesQueueName = "fx-rate-refreshes";
const refreshJobName = "refresh-fx-rate";
export const fxRefreshActor = "system:fx-refresh";

export interface FxRateRefreshWorkerDependencies {
  backend: QueueBackend;
  database: Pick<pg.Pool, "query">;
  refresher: FxRateRefresher;
  clock: Clock;
  logger: Logger;
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

  // In the background, so that a queue store down at boot does not hold the process.
  const scheduling = retryInBackground({
    ...backgroundRetryDefaults,
    description: "scheduling the FX refresh",
    logger,
    task: async () => {
      await queue.upsertJobScheduler(fxRefreshJobSchedulerId, fxRefreshSchedule, { name: refreshJobName });
      const today = seoulDateOf(dependencies.clock());
      if (dependencies.refresher.configured && (await isFxRefreshNeeded(dependencies.database, today))) {
        // One id per day: N worker processes starting together enqueue one start-up refresh.
        await queue.add(refreshJobName, {}, { jobId: `startup-refresh-${today}` });
      }
    },
  });
  return {
    close: async (force = false) => {
      await scheduling.stop();
      await closeWithin({ close: () => worker.close(force) }, billingLimits.queueCloseTimeoutMs);
      await closeWithin(queue, billingLimits.queueCloseTimeoutMs);
    },
  };
}
