import type { JobsOptions, Queue } from "bullmq";
import type { Logger } from "pino";
import { billingLimits } from "./billing-limits";
import type { ChargeEnqueuer } from "./charge-enqueuer";
import { openQueue, type QueueBackend, type QueueRole } from "./queue-backend";
import { errorSummaryOf, throttledLog } from "./throttled-log";

/**
 * The queue of charges to reconcile. One job per request, its id derived from the request id: BullMQ keeps
 * one job per id while it waits, runs or retries, so the gateway and the sweeper may both enqueue the same
 * request and it is charged by one job. Completed and failed jobs are removed so that the id is free again
 * for the sweeper — the ledger, not the queue, is the record of what was charged.
 */

export const usageChargesQueueName = "usage-charges";
export const chargeUsageJobName = "charge-usage";

export interface ChargeUsageJobData {
  requestId: string;
}

export const chargeUsageJobOptions: JobsOptions = {
  attempts: billingLimits.chargeJobAttemptsMax,
  backoff: { type: "exponential", delay: billingLimits.chargeJobBackoffInitialMs },
  removeOnComplete: true,
  removeOnFail: true,
};

/**
 * BullMQ refuses ids that are integers or contain ":". Request ids are `req_<hex>` and pass unchanged;
 * anything else is encoded, with a "~" prefix no plain id has, so that the mapping stays one-to-one.
 */
export function chargeJobIdOf(requestId: string): string {
  if (/^[A-Za-z0-9_.-]+$/.test(requestId) && !/^\d+$/.test(requestId)) return requestId;
  return `~${Buffer.from(requestId, "utf8").toString("base64url")}`;
}

export interface ChargeQueue extends ChargeEnqueuer {
  /** Enqueues and waits (sweeper, tests). Duplicates of waiting or running jobs are ignored by BullMQ. */
  enqueueCharges(requestIds: readonly string[]): Promise<void>;
  close(): Promise<void>;
}

export interface ChargeQueueDependencies {
  backend: QueueBackend;
  logger: Logger;
  /** `request-path` (default) for the gateway: fail fast when the store is away. */
  role?: QueueRole;
  limits?: { chargeEnqueueTimeoutMs?: number; chargeEnqueuesInFlightMax?: number };
}

export function createChargeQueue(dependencies: ChargeQueueDependencies): ChargeQueue {
  const limits = {
    chargeEnqueueTimeoutMs: billingLimits.chargeEnqueueTimeoutMs,
    chargeEnqueuesInFlightMax: billingLimits.chargeEnqueuesInFlightMax,
    ...dependencies.limits,
  };
  const logger = dependencies.logger.child({ queue: usageChargesQueueName });
  const errors = throttledLog(logger, billingLimits.queueErrorLogIntervalMs);
  const queue: Queue<ChargeUsageJobData> = openQueue(usageChargesQueueName, dependencies.backend, {
    role: dependencies.role ?? "request-path",
    defaultJobOptions: chargeUsageJobOptions,
  });
  // Without a listener an 'error' event would crash the process.
  queue.on("error", (error) => errors.error({ err: errorSummaryOf(error) }, "charge queue connection error"));
  let inFlight = 0;
  let closed = false;

  const add = (requestId: string) =>
    queue.add(chargeUsageJobName, { requestId }, { jobId: chargeJobIdOf(requestId) });

  return {
    enqueueCharge(requestId) {
      if (closed) return;
      // A queue that never answers must not grow without bound: past the limit, leave it to the sweeper.
      if (inFlight >= limits.chargeEnqueuesInFlightMax) {
        errors.error({ requestId, inFlight }, "charge queue saturated; the sweeper will enqueue this usage");
        return;
      }
      const failed = (error: unknown) =>
        errors.error(
          { requestId, err: errorSummaryOf(error) },
          "enqueueing a charge failed; the sweeper will enqueue this usage",
        );
      // The request path must never see an exception from here, not even a synchronous one.
      try {
        inFlight += 1;
        const adding = add(requestId).finally(() => {
          inFlight -= 1;
        });
        void withTimeout(adding, limits.chargeEnqueueTimeoutMs).catch(failed);
      } catch (error) {
        inFlight -= 1;
        failed(error);
      }
    },
    async enqueueCharges(requestIds) {
      if (requestIds.length === 0) return;
      await queue.addBulk(
        requestIds.map((requestId) => ({
          name: chargeUsageJobName,
          data: { requestId },
          opts: { ...chargeUsageJobOptions, jobId: chargeJobIdOf(requestId) },
        })),
      );
    },
    async close() {
      closed = true;
      await closeWithin(queue, billingLimits.queueCloseTimeoutMs);
    },
  };
}

class EnqueueTimeoutError extends Error {
  override readonly name = "EnqueueTimeoutError";
}

function withTimeout<T>(promise: Promise<T>, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new EnqueueTimeoutError(`no answer within ${timeoutMs} ms`)), timeoutMs);
    timer.unref();
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Closing waits for pending commands; when the store is away that could be forever. */
export async function closeWithin(closable: { close(): Promise<void> }, timeoutMs: number): Promise<void> {
  await withTimeout(closable.close(), timeoutMs).catch(() => {});
}
