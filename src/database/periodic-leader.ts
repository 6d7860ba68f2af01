import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import type { Logger } from "pino";

/**
 * Periodic background tasks run by exactly one process of a deployment: the one whose dedicated session
 * holds a PostgreSQL advisory lock (the leader). The others stand by, retrying the lock every
 * `standbyRetryMs`, and take over as soon as the leader's session ends (process killed, connection lost).
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

/** Connecting, and each statement on the lock session, gives up after this long. */
const connectTimeoutMs = 10_000;

export interface PeriodicLeaderOptions {
  connectionString: string;
  /** The advisory lock key: one per set of tasks that must not run twice at once. */
  lockKey: number;
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
    this.running ??= this.run();
  }

  /**
   * Stops the tasks (waiting for runs in progress) and releases the lock; bounded, so a connection that
   * hangs cannot hold a stopping process (the lock goes with the session when the process exits).
   */
  async close(): Promise<void> {
    this.stopping.abort();
    if (!this.running) return;
    const boundMs = this.options.runsStopWaitMs + connectTimeoutMs;
    await Promise.race([this.running, sleep(boundMs, undefined, { ref: false })]);
  }

  private async run(): Promise<void> {
    const signal = this.stopping.signal;
    while (!signal.aborted) {
      try {
        await this.leadWhileHoldingLock(signal);
      } catch (error) {
        if (!signal.aborted)
          this.options.logger.debug({ err: summaryOf(error) }, "leader lock attempt failed; retrying");
      }
      await sleep(this.options.standbyRetryMs, undefined, { signal }).catch(() => {});
    }
  }

  private async leadWhileHoldingLock(signal: AbortSignal): Promise<void> {
    const client = new pg.Client({
      connectionString: this.options.connectionString,
      application_name: this.options.applicationName,
      keepAlive: true,
      // A server at its connection limit may close the socket mid-handshake; never wait on it for ever.
      connectionTimeoutMillis: connectTimeoutMs,
      query_timeout: connectTimeoutMs,
    });
    const lost = new AbortController();
    client.on("error", () => lost.abort());
    client.on("end", () => lost.abort());
    try {
      await client.connect();
    } catch (error) {
      await client.end().catch(() => {});
      throw error;
    }
    try {
      const locked = await client.query<{ locked: boolean }>("SELECT pg_try_advisory_lock($1) AS locked", [
        this.options.lockKey,
      ]);
      if (!locked.rows[0]?.locked) return;
      const termEnds = AbortSignal.any([signal, lost.signal]);
      this.term = { signal: termEnds, runs: [] };
      this.options.logger.info(
        { tasks: this.tasks.map((task) => task.name) },
        "leading the periodic tasks of this deployment",
      );
      for (const task of this.tasks) this.term.runs.push(this.runRepeatedly(task, termEnds));
      // The session is the lock: check it is alive, so a silently dead connection ends the term.
      while (!termEnds.aborted) {
        await sleep(this.options.standbyRetryMs, undefined, { signal: termEnds }).catch(() => {});
        if (termEnds.aborted) break;
        await client.query("SELECT 1").catch(() => lost.abort());
      }
      if (!signal.aborted) this.options.logger.warn("lost the lead of the periodic tasks; standing by");
      await Promise.race([
        Promise.all(this.term.runs),
        sleep(this.options.runsStopWaitMs, undefined, { ref: false }),
      ]);
    } finally {
      this.term = undefined;
      await client.end().catch(() => {});
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
