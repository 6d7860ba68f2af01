import { randomUUID } from "node:crypto";
import type { JobsOptions, Queue } from "bullmq";
import type { Logger } from "pino";
import { billingLimits } from "../../kernel/limits";
import { errorSummaryOf, type ThrottledLog, throttledLog } from "../../kernel/throttled-log";
import type { ChargeEnqueuer } from "./charge-enqueuer";
import { openQueue, type QueueBackend, type QueueRole } from "./queue-backend";

/**
 * The queue of charges to reconcile. A job carries the request ids of a batch of usages: the gateway sends
 * the usages that finished within a short linger, or while its previous enqueue was in flight, as one job
 * (one Redis round trip for many requests), and the worker charges a job's usages together. A request may
 * end up in two jobs (the gateway's and the sweeper's); the ledger, not the queue, keeps it charged once.
 * Completed and failed jobs are removed: the ledger is the record of what was charged.
 */

export const usageChargesQueueName = "usage-charges";
export const chargeUsageJobName = "charge-usages";

export interface ChargeUsageJobData {
  requestIds: string[];
}

export const chargeUsageJobOptions: JobsOptions = {
  attempts: billingLimits.chargeJobAttemptsMax,
  backoff: { type: "exponential", delay: billingLimits.chargeJobBackoffInitialMs },
  removeOnComplete: true,
  removeOnFail: true,
};

export interface ChargeQueue extends ChargeEnqueuer {
  /**
   * Enqueues and waits (sweeper, tests), in jobs of at most `chargeJobRequestsMax` requests; answers the
   * id of each job with its requests, so the caller can tell later whether a job is still queued.
   */
  enqueueCharges(requestIds: readonly string[]): Promise<EnqueuedChargeJob[]>;
  /** Of `jobIds`, those still in the queue (waiting, delayed or running). */
  queuedJobIds(jobIds: readonly string[]): Promise<Set<string>>;
  /** Sends what is still waiting to be enqueued (bounded by the enqueue timeout), then closes. */
  close(): Promise<void>;
}

export interface EnqueuedChargeJob {
  jobId: string;
  requestIds: readonly string[];
}

export interface ChargeQueueDependencies {
  backend: QueueBackend;
  logger: Logger;
  /** `request-path` (default) for the gateway: fail fast when the store is away. */
  role?: QueueRole;
  limits?: {
    chargeEnqueueTimeoutMs?: number;
    chargeEnqueuesWaitingMax?: number;
    chargeEnqueueLingerMs?: number;
  };
}

type ChargeQueueLimits = Required<NonNullable<ChargeQueueDependencies["limits"]>>;

export function createChargeQueue(dependencies: ChargeQueueDependencies): ChargeQueue {
  const limits: ChargeQueueLimits = {
    chargeEnqueueTimeoutMs: billingLimits.chargeEnqueueTimeoutMs,
    chargeEnqueuesWaitingMax: billingLimits.chargeEnqueuesWaitingMax,
    chargeEnqueueLingerMs: billingLimits.chargeEnqueueLingerMs,
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
  const batcher = createChargeBatcher(queue, limits, errors);
  return {
    enqueueCharge: (requestId) => batcher.enqueue(requestId),
    enqueueCharges: (requestIds) => enqueueInJobs(queue, requestIds),
    queuedJobIds: (jobIds) => queuedJobIdsOf(queue, jobIds),
    async close() {
      await batcher.flushAndStop();
      await closeWithin(queue, billingLimits.queueCloseTimeoutMs);
    },
  };
}

/**
 * The request path's enqueues, gathered into jobs: requests wait in memory while one job is in flight (or for
 * the linger), then go together. Nothing here throws to the caller; a failed job is left to the sweeper.
 */
function createChargeBatcher(
  queue: Queue<ChargeUsageJobData>,
  limits: ChargeQueueLimits,
  errors: ThrottledLog,
) {
  let waiting: string[] = [];
  let sending = false;
  let closed = false;

  /** One job at a time; whatever arrives meanwhile goes in the next one. */
  async function sendWaiting(): Promise<void> {
    sending = true;
    try {
      while (waiting.length > 0 && !closed) {
        // Light traffic: gather a few requests per job rather than sending one job per request.
        if (limits.chargeEnqueueLingerMs > 0 && waiting.length < billingLimits.chargeJobRequestsMax) {
          await new Promise((resolve) => setTimeout(resolve, limits.chargeEnqueueLingerMs));
        }
        const requestIds = waiting.splice(0, billingLimits.chargeJobRequestsMax);
        try {
          await withTimeout(queue.add(chargeUsageJobName, { requestIds }), limits.chargeEnqueueTimeoutMs);
        } catch (error) {
          errors.error(
            { requestIds: requestIds.length, err: errorSummaryOf(error) },
            "enqueueing charges failed; the sweeper will enqueue these usages",
          );
        }
      }
    } finally {
      sending = false;
    }
  }

  return {
    enqueue(requestId: string): void {
      if (closed) return;
      // A queue that never answers must not grow without bound: past the limit, leave it to the sweeper.
      if (waiting.length >= limits.chargeEnqueuesWaitingMax) {
        errors.error(
          { requestId, waiting: waiting.length },
          "charge queue saturated; the sweeper will enqueue this usage",
        );
        return;
      }
      waiting.push(requestId);
      // The request path must never see an exception from here: sendWaiting catches everything it awaits.
      if (!sending) void sendWaiting();
    },
    /** Usage recorded by requests that just finished is enqueued now rather than left to the sweeper. */
    async flushAndStop(): Promise<void> {
      const flushDeadlineMs = Date.now() + limits.chargeEnqueueTimeoutMs;
      while ((sending || waiting.length > 0) && Date.now() < flushDeadlineMs) {
        if (!sending) void sendWaiting();
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      closed = true;
      waiting = [];
    },
  };
}

/** Enqueues in jobs of at most `chargeJobRequestsMax` requests, each with its own id. */
async function enqueueInJobs(
  queue: Queue<ChargeUsageJobData>,
  requestIds: readonly string[],
): Promise<EnqueuedChargeJob[]> {
  if (requestIds.length === 0) return [];
  const jobs = [];
  for (let start = 0; start < requestIds.length; start += billingLimits.chargeJobRequestsMax) {
    const batch = requestIds.slice(start, start + billingLimits.chargeJobRequestsMax);
    jobs.push({
      name: chargeUsageJobName,
      data: { requestIds: batch },
      opts: { ...chargeUsageJobOptions, jobId: `charges-${randomUUID()}` },
    });
  }
  await queue.addBulk(jobs);
  return jobs.map((job) => ({ jobId: job.opts.jobId, requestIds: job.data.requestIds }));
}

async function queuedJobIdsOf(
  queue: Queue<ChargeUsageJobData>,
  jobIds: readonly string[],
): Promise<Set<string>> {
  const states = await Promise.all(jobIds.map((jobId) => queue.getJobState(jobId)));
  const queuedStates = new Set(["waiting", "waiting-children", "delayed", "prioritized", "active"]);
  return new Set(jobIds.filter((_jobId, index) => queuedStates.has(states[index]!)));
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
