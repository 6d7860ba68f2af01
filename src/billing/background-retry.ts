import { setTimeout as sleep } from "node:timers/promises";
import type { Logger } from "pino";
import { errorSummaryOf } from "./throttled-log";

/**
 * Start-up work against the queue store (upserting job schedulers, the start-up FX job) must not hold the
 * process: with Redis down at boot the gateway must still serve. It runs in the background, each attempt
 * bounded in time, retried a bounded number of times, and stopped when the process closes.
 */
export interface BackgroundRetryOptions {
  description: string;
  task: () => Promise<void>;
  logger: Logger;
  attemptTimeoutMs: number;
  retryDelayMs: number;
  attemptsMax: number;
}

export interface BackgroundTask {
  /** Resolves when the task succeeded or was given up. */
  readonly settled: Promise<void>;
  stop(): Promise<void>;
}

export const backgroundRetryDefaults = {
  attemptTimeoutMs: 10_000,
  retryDelayMs: 15_000,
  /** An hour of retries; after that an operator must look (the error is logged). */
  attemptsMax: 240,
} as const;

export function retryInBackground(options: BackgroundRetryOptions): BackgroundTask {
  const stopping = new AbortController();
  const settled = (async () => {
    for (let attempt = 1; attempt <= options.attemptsMax && !stopping.signal.aborted; attempt += 1) {
      try {
        await withDeadline(options.task(), options.attemptTimeoutMs, stopping.signal);
        return;
      } catch (error) {
        if (stopping.signal.aborted) return;
        const givingUp = attempt === options.attemptsMax;
        options.logger[givingUp ? "error" : "warn"](
          { attempt, err: errorSummaryOf(error) },
          `${options.description} failed${givingUp ? "; giving up" : "; retrying"}`,
        );
        await sleep(options.retryDelayMs, undefined, { signal: stopping.signal }).catch(() => {});
      }
    }
  })();
  return {
    settled,
    stop: async () => {
      stopping.abort();
      await settled;
    },
  };
}

function withDeadline(task: Promise<void>, timeoutMs: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    const onAbort = () => reject(new Error("stopped"));
    signal.addEventListener("abort", onAbort, { once: true });
    task.then(resolve, reject).finally(() => {
      clearTimeout(timer);
      signal.removeEventListener("abort", onAbort);
    });
  });
}
