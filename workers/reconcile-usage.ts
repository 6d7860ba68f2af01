import { type Job, UnrecoverableError } from "bullmq";
import type { Logger } from "pino";
import { type ChargeUsageOutcome, UsageNotRecordedError } from "../src/billing/charging/charge-usage";
import {
  type ChargeUsageJobData,
  closeWithin,
  usageChargesQueueName,
} from "../src/billing/queue/charge-queue";
import { openWorker, type QueueBackend } from "../src/billing/queue/queue-backend";
import { RowsLockedError } from "../src/database/lock-wait";
import { billingLimits } from "../src/kernel/limits";
import { errorSummaryOf, throttledLog } from "../src/kernel/throttled-log";

/**
 * The reconciler: a BullMQ worker on the `usage-charges` queue that runs ChargeUsage for every request of
 * each job. Any number of processes may run it; exactly-once is the ledger's doing (see charge-usage.ts),
 * so BullMQ's at-least-once delivery — retries, stalled jobs redelivered after a worker died — is harmless.
 * A job whose requests partly failed keeps only the failed ones for its retry.
 */

export interface ReconcileUsageSettings {
  concurrency: number;
  lockDurationMs: number;
  stalledCheckIntervalMs: number;
  stalledCountMax: number;
}

export const reconcileUsageSettings: ReconcileUsageSettings = {
  concurrency: billingLimits.reconcileUsageConcurrency,
  lockDurationMs: billingLimits.reconcileUsageLockDurationMs,
  stalledCheckIntervalMs: billingLimits.reconcileUsageStalledCheckIntervalMs,
  stalledCountMax: billingLimits.reconcileUsageStalledCountMax,
};

export interface ReconcileUsageDependencies {
  backend: QueueBackend;
  /** ChargeUsage for a batch (`chargeUsages`), bound to its dependencies. */
  chargeUsages: (
    requestIds: readonly string[],
  ) => Promise<Map<string, PromiseSettledResult<ChargeUsageOutcome>>>;
  logger: Logger;
  settings?: Partial<ReconcileUsageSettings>;
}

export interface RunningWorker {
  /** `force`: stop at once without waiting for running jobs (their locks expire; others pick them up). */
  close(force?: boolean): Promise<void>;
}

/**
 * A job whose charges failed only because their accounts' funds rows were held past the append's bound (a
 * transaction left open on them): retried as any failure, but told at warn, throttled, since it is expected
 * for as long as that transaction lasts.
 */
class ChargesRowsLockedError extends Error {
  override readonly name = "ChargesRowsLockedError";
}

export function startReconcileUsageWorker(dependencies: ReconcileUsageDependencies): RunningWorker {
  const settings = { ...reconcileUsageSettings, ...dependencies.settings };
  const logger = dependencies.logger.child({ worker: usageChargesQueueName });
  const errors = throttledLog(logger, billingLimits.queueErrorLogIntervalMs);
  const lockWaits = throttledLog(logger, billingLimits.queueErrorLogIntervalMs);

  const worker = openWorker<ChargeUsageJobData>(
    usageChargesQueueName,
    async (job: Job<ChargeUsageJobData>) => {
      const requestIds = requestIdsOf(job);
      const outcomes = await dependencies.chargeUsages(requestIds);
      const retry: string[] = [];
      let firstRetryReason: unknown;
      let allRowsLocked = true;
      const counts = { charged: 0, "already-charged": 0, unrecoverable: 0 };
      for (const [requestId, outcome] of outcomes) {
        if (outcome.status === "fulfilled") counts[outcome.value.kind] += 1;
        // Retrying cannot make these succeed: the usage does not exist, or its data breaks the formula.
        else if (outcome.reason instanceof UsageNotRecordedError || outcome.reason instanceof RangeError) {
          counts.unrecoverable += 1;
          logger.error(
            { requestId, err: errorSummaryOf(outcome.reason) },
            "this usage cannot be charged; it is dropped from its job",
          );
        } else {
          if (retry.length === 0) firstRetryReason = outcome.reason;
          if (!(outcome.reason instanceof RowsLockedError)) allRowsLocked = false;
          retry.push(requestId);
        }
      }
      logger.debug({ jobId: job.id, ...counts, retrying: retry.length }, "usages reconciled");
      if (retry.length > 0) {
        await job.updateData({ requestIds: retry });
        const message = `${retry.length} of ${requestIds.length} charges failed (first: ${retry[0]}: ${errorSummaryOf(firstRetryReason).message})`;
        throw allRowsLocked ? new ChargesRowsLockedError(message) : new Error(message);
      }
      return counts;
    },
    dependencies.backend,
    {
      concurrency: settings.concurrency,
      lockDuration: settings.lockDurationMs,
      stalledInterval: settings.stalledCheckIntervalMs,
      maxStalledCount: settings.stalledCountMax,
    },
  );
  worker.on("error", (error) => errors.error({ err: errorSummaryOf(error) }, "reconciler connection error"));
  worker.on("failed", (job, error) => {
    const finalAttempt = job === undefined || job.attemptsMade >= (job.opts.attempts ?? 1);
    const details = {
      requests: job?.data.requestIds?.length,
      attemptsMade: job?.attemptsMade,
      err: errorSummaryOf(error),
    };
    if (error instanceof ChargesRowsLockedError) {
      lockWaits.warn(
        { ...details, finalAttempt },
        "charging usages waited too long for their accounts' funds rows, which another transaction holds; retrying (the sweeper enqueues them again once their job gives up)",
      );
    } else if (finalAttempt || error instanceof UnrecoverableError) {
      logger.error(
        details,
        "charging usages failed for good; they stay pending and the sweeper enqueues them again",
      );
    } else {
      logger.warn(details, "charging usages failed; retrying");
    }
  });
  return {
    close: (force = false) =>
      closeWithin({ close: () => worker.close(force) }, billingLimits.queueCloseTimeoutMs),
  };
}

function requestIdsOf(job: Job<ChargeUsageJobData>): string[] {
  const requestIds: unknown = job.data?.requestIds;
  const valid =
    Array.isArray(requestIds) &&
    requestIds.length > 0 &&
    requestIds.every((requestId) => typeof requestId === "string" && requestId !== "");
  if (!valid) throw new UnrecoverableError(`job ${job.id} carries no request ids`);
  return requestIds as string[];
}
