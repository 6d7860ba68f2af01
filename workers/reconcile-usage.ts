import { type Job, UnrecoverableError } from "bullmq";
import type { Logger } from "pino";
import { billingLimits } from "../src/billing/billing-limits";
import { type ChargeUsageJobData, closeWithin, usageChargesQueueName } from "../src/billing/charge-queue";
import { type ChargeUsageOutcome, UsageNotRecordedError } from "../src/billing/charge-usage";
import { openWorker, type QueueBackend } from "../src/billing/queue-backend";
import { errorSummaryOf, throttledLog } from "../src/billing/throttled-log";

/**
 * The reconciler: a BullMQ worker on the `usage-charges` queue that runs ChargeUsage for each job. Any
 * number of processes may run it; exactly-once is the ledger's doing (see charge-usage.ts), so BullMQ's
 * at-least-once delivery — retries, stalled jobs redelivered after a worker died — is harmless.
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
  /** ChargeUsage, bound to its dependencies. */
  chargeUsage: (requestId: string) => Promise<ChargeUsageOutcome>;
  logger: Logger;
  settings?: Partial<ReconcileUsageSettings>;
}

export interface RunningWorker {
  /** `force`: stop at once without waiting for running jobs (their locks expire; others pick them up). */
  close(force?: boolean): Promise<void>;
}

export function startReconcileUsageWorker(dependencies: ReconcileUsageDependencies): RunningWorker {
  const settings = { ...reconcileUsageSettings, ...dependencies.settings };
  const logger = dependencies.logger.child({ worker: usageChargesQueueName });
  const errors = throttledLog(logger, billingLimits.queueErrorLogIntervalMs);

  const worker = openWorker<ChargeUsageJobData>(
    usageChargesQueueName,
    async (job: Job<ChargeUsageJobData>) => {
      const requestId = requestIdOf(job);
      try {
        const outcome = await dependencies.chargeUsage(requestId);
        logger.debug({ requestId, outcome: outcome.kind }, "usage reconciled");
        return outcome.kind;
      } catch (error) {
        // Retrying cannot make these succeed: the usage does not exist, or its data breaks the formula.
        if (error instanceof UsageNotRecordedError || error instanceof RangeError) {
          throw new UnrecoverableError(error.message);
        }
        throw error;
      }
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
      requestId: job?.data.requestId,
      attemptsMade: job?.attemptsMade,
      err: errorSummaryOf(error),
    };
    if (finalAttempt || error instanceof UnrecoverableError) {
      logger.error(
        details,
        "charging a usage failed for good; a recorded usage stays pending and the sweeper enqueues it again",
      );
    } else {
      logger.warn(details, "charging a usage failed; retrying");
    }
  });
  return {
    close: (force = false) =>
      closeWithin({ close: () => worker.close(force) }, billingLimits.queueCloseTimeoutMs),
  };
}

function requestIdOf(job: Job<ChargeUsageJobData>): string {
  const requestId: unknown = job.data?.requestId;
  if (typeof requestId !== "string" || requestId === "") {
    throw new UnrecoverableError(`job ${job.id} carries no request id`);
  }
  return requestId;
}
