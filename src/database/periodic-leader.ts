import { setTimeout as sleep } from "node:timers/promises";
import type { Logger } from "pino";
import { databaseSessionLimits } from "../kernel/limits";
import type { AdvisoryLockKey } from "./advisory-lock-keys";
import { contendForLead, leaderSessionSetupTimeoutMs } from "./advisory-lock-leader";

/**
 * Periodic background tasks run by exactly one process of a deployment: the leader of an advisory lock
 * (advisory-lock-leader.ts). The others stand by, retrying the lock every `standbyRetryMs`, and take over as
 * soon as the leader's session ends (process killed, connection lost).
 *
 * Why not BullMQ job schedulers: a schedule kept in Redis vanishes with Redis's data (FLUSHALL, a restart
 * without persistence) and nothing recreates it until a worker restarts. The lock lives in the same
 * PostgreSQL as the ledger the tasks work on, and a timer in the leader needs no stored state at all.
 *
 * Each task runs at once when this process takes the lead, then `intervalMs` after each run ends (runs of
 * one task never overlap). Leadership is exclusive while sessions are healthy, but a deposed leader may
 * still be finishing a run when its successor starts one: tasks must be idempotent.
 */

export type PeriodicTask = (signal: AbortSignal) => Promise<void>;

/** Each statement on the lock session (its liveness checks: the tasks do not use it) gives up after this long. */
const lockSessionQueryTimeoutMs = databaseSessionLimits.periodicLeaderQueryTimeoutMs;

export interface PeriodicLeaderOptions {
  connectionString: string;
  /** The advisory lock key: one per set of tasks that must not run twice at once. */
  lockKey: AdvisoryLockKey;
  /** Shown in `pg_stat_activity`. */
  applicationName: string;
  /** How often a stand-by process tries to take the lead, and the leader checks its session. */
  standbyRetryMs: number;
  /** Losing the lead or closing waits at most this long for runs in progress (a store may hang). */
  runsStopWaitMs: number;
  logger: Logger;
}

interface RegisteredTask {
  name: string;
  intervalMs: number;
  task: PeriodicTask;
}

export class PeriodicLeader {
  private readonly tasks: RegisteredTask[] = [];
  private readonly stopping = new AbortController();
  private running: Promise<void> | undefined;
  /** Aborted when this term of leadership ends; undefined while standing by. */
  private term: { signal: AbortSignal; runs: Promise<void>[] } | undefined;

  constructor(private readonly options: PeriodicLeaderOptions) {}

  /**
   * Runs `task` every `intervalMs` in whichever process leads. The task's signal aborts when the lead is
   * lost or the process stops; a task that throws is logged and runs again at its next interval.
   */
  every(name: string, intervalMs: number, task: PeriodicTask): void {
    if (!Number.isFinite(intervalMs) || intervalMs <= 0) throw new RangeError(`bad interval for ${name}`);
    if (this.tasks.some((registered) => registered.name === name)) throw new Error(`task ${name} exists`);
    const registered = { name, intervalMs, task };
    this.tasks.push(registered);
    if (this.term) this.term.runs.push(this.runRepeatedly(registered, this.term.signal));
  }

  /** True while this process holds the lock. */
  get leading(): boolean {
    return this.term !== undefined;
  }

  start(): void {
    const { connectionString, lockKey, applicationName, standbyRetryMs, logger } = this.options;
    this.running ??= contendForLead(
      {
        connectionString,
        lockKey,
        applicationName,
        standbyRetryMs,
        queryTimeoutMs: lockSessionQueryTimeoutMs,
        lead: (_session, term) => this.lead(term),
        onFailing: (error) =>
          logger.warn({ err: summaryOf(error) }, "periodic tasks' leader lock session failed; standing by"),
        onRecovered: () => logger.info("periodic tasks' leader lock session works again"),
      },
      this.stopping.signal,
    );
  }

  /**
   * Stops the tasks (waiting for runs in progress) and releases the lock; bounded, so a connection that
   * hangs cannot hold a stopping process (the lock goes with the session when the process exits).
   */
  async close(): Promise<void> {
    this.stopping.abort();
    if (!this.running) return;
    const boundMs = this.options.runsStopWaitMs + leaderSessionSetupTimeoutMs;
    await Promise.race([this.running, sleep(boundMs, undefined, { ref: false })]);
  }

  /** One term: every task runs until the term ends, which then waits (bounded) for runs in progress. */
  private async lead(term: AbortSignal): Promise<void> {
    this.term = { signal: term, runs: [] };
    try {
      this.options.logger.info(
        { tasks: this.tasks.map((task) => task.name) },
        "leading the periodic tasks of this deployment",
      );
      for (const task of this.tasks) this.term.runs.push(this.runRepeatedly(task, term));
      await untilAborted(term);
      await Promise.race([
        Promise.all(this.term.runs),
        sleep(this.options.runsStopWaitMs, undefined, { ref: false }),
      ]);
    } finally {
      this.term = undefined;
    }
  }

  private async runRepeatedly(registered: RegisteredTask, signal: AbortSignal): Promise<void> {
    const logger = this.options.logger.child({ task: registered.name });
    let failing = false;
    while (!signal.aborted) {
      try {
        await registered.task(signal);
        if (failing) logger.info("periodic task succeeds again");
        failing = false;
      } catch (error) {
        // One line when a task starts failing, not one per interval while its dependency is away.
        if (!failing && !signal.aborted) logger.error({ err: summaryOf(error) }, "periodic task failed");
        failing = true;
      }
      await sleep(registered.intervalMs, undefined, { signal }).catch(() => {});
    }
  }
}

function summaryOf(error: unknown): { name: string; message: string } {
  return error instanceof Error
    ? { name: error.name, message: error.message }
    : { name: "unknown", message: String(error) };
}

function untilAborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener("abort", () => resolve(), { once: true });
  });
}
