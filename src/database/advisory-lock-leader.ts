import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import { assert } from "../kernel/assert";
import { databaseSessionLimits } from "../kernel/limits";
import type { AdvisoryLockKey } from "./advisory-lock-keys";

/**
 * One process of a deployment leads a piece of background work: the one whose dedicated session holds a
 * PostgreSQL advisory lock. The others stand by, trying the lock every `standbyRetryMs`.
 *
 * The lock is the session: PostgreSQL releases it when the session ends, however it ends (process killed,
 * connection cut, backend terminated), and a stand-by takes over. So a dead connection must end the
 * leader's term too: the term signal aborts on the client's 'error' or 'end', and on a liveness check the
 * server does not answer in time (a silently dead connection raises neither event).
 *
 * A frozen process (SIGSTOP, a paused VM) raises nothing either, and keeps its socket open for the server:
 * so the leader touches its session every `standbyRetryMs` (at most a quarter of `sessionIdleMaxMs`), and the
 * session itself asks PostgreSQL to end it when it has been idle longer than `sessionIdleMaxMs`, between
 * statements or inside a transaction. A frozen leader's lock is then freed within that bound, by the server,
 * whatever the process does; when it thaws, its session is gone and its term ends.
 *
 * Leadership is exclusive while sessions are healthy, not absolute: a deposed leader learns of its loss
 * only at its next statement or check, and may still be finishing work when its successor starts. What a
 * leader does must be idempotent, or guarded in the database itself, as the projection runner's checkpoint
 * compare-and-set is.
 */

export const { leaderSessionSetupTimeoutMs } = databaseSessionLimits;

export interface AdvisoryLockLeaderOptions {
  connectionString: string;
  lockKey: AdvisoryLockKey;
  /** Shown in `pg_stat_activity`: how an operator, or a test, finds the leader's session. */
  applicationName: string;
  /** Pause between attempts to take the lock, and between liveness checks of the leader's session. */
  standbyRetryMs: number;
  /**
   * Bound on each statement on the session, the lead's too, so a dead connection cannot hang the leader.
   * "unbounded" for a lead whose own statements may run long (a projection refold): its session then has
   * no liveness check, which would wait behind them, and a lost session shows when its next statement fails.
   */
  queryTimeoutMs: number | "unbounded";
  /** The server ends the lock session after this long without a statement (default: the limit's). */
  sessionIdleMaxMs?: number;
  /**
   * The work of one term, on the lock session. It should return soon after `term` aborts (the process
   * stops, or the session is lost); the session is ended only then, so it may finish what it was doing.
   */
  lead: (session: pg.Client, term: AbortSignal) => Promise<void>;
  /** Called when attempts start failing (a lost session, a refused connection, a lead that threw). */
  onFailing?: (error: unknown) => void;
  /** Called when an attempt works again after `onFailing`: standing by, or a term that lasted. */
  onRecovered?: () => void;
}

/** Contends for the lock, leading whenever it is held, until `stopping` aborts and the session is ended. */
export async function contendForLead(
  options: AdvisoryLockLeaderOptions,
  stopping: AbortSignal,
): Promise<void> {
  assert(options.standbyRetryMs > 0, "standbyRetryMs must be positive");
  assert(
    options.queryTimeoutMs === "unbounded" || options.queryTimeoutMs > 0,
    "queryTimeoutMs must be positive",
  );
  const health = healthReporter(options);
  // Unbounded on purpose: a stand-by process contends for as long as it runs; each pass waits standbyRetryMs.
  while (!stopping.aborted) {
    try {
      await attemptToLead(options, stopping, health.recovered);
      health.recovered();
    } catch (error) {
      if (!stopping.aborted) health.failed(error);
    }
    await sleep(options.standbyRetryMs, undefined, { signal: stopping }).catch(() => {});
  }
}

/** One line when attempts start failing and one when they work again, not one per retry. */
function healthReporter(options: AdvisoryLockLeaderOptions): {
  failed(error: unknown): void;
  recovered(): void;
} {
  let failing = false;
  return {
    failed(error) {
      if (!failing) options.onFailing?.(error);
      failing = true;
    },
    recovered() {
      if (failing) options.onRecovered?.();
      failing = false;
    },
  };
}

/** Opens a session and, if it gets the lock, leads one term; throws when the term ended by a lost session. */
async function attemptToLead(
  options: AdvisoryLockLeaderOptions,
  stopping: AbortSignal,
  onTermLasted: () => void,
): Promise<void> {
  const queryTimeoutMs = options.queryTimeoutMs === "unbounded" ? undefined : options.queryTimeoutMs;
  const idleMaxMs = options.sessionIdleMaxMs ?? databaseSessionLimits.leaderSessionIdleMaxMs;
  const session = new pg.Client({
    connectionString: options.connectionString,
    application_name: options.applicationName,
    keepAlive: true,
    // A server at its connection limit may close the socket mid-handshake; never wait on it for ever.
    connectionTimeoutMillis: leaderSessionSetupTimeoutMs,
    ...(queryTimeoutMs === undefined ? {} : { query_timeout: queryTimeoutMs }),
  });
  const lost = new AbortController();
  session.on("error", (error) => lost.abort(error));
  session.on("end", () => lost.abort(new Error("the leader's session ended")));
  try {
    await session.connect();
    const locked = await session.query<{ locked: boolean }>(
      timed(
        { text: "SELECT pg_try_advisory_lock($1) AS locked", values: [options.lockKey] },
        leaderSessionSetupTimeoutMs,
      ),
    );
    if (!locked.rows[0]?.locked) return;
    // Set once the lock is held: a stand-by's session lives only for its attempt.
    await session.query(
      timed(
        {
          text: `SELECT set_config('idle_session_timeout', $1, false),
                        set_config('idle_in_transaction_session_timeout', $1, false)`,
          values: [String(idleMaxMs)],
        },
        leaderSessionSetupTimeoutMs,
      ),
    );
    const termOver = new AbortController();
    const term = AbortSignal.any([stopping, lost.signal, termOver.signal]);
    const lasted = setTimeout(onTermLasted, options.standbyRetryMs);
    void touchSession(session, term, lost, {
      everyMs: Math.min(options.standbyRetryMs, Math.floor(idleMaxMs / 4)),
      answerWithinMs: queryTimeoutMs === undefined ? undefined : 2 * queryTimeoutMs,
    });
    try {
      await options.lead(session, term);
    } finally {
      clearTimeout(lasted);
      termOver.abort();
    }
    if (lost.signal.aborted && !stopping.aborted) throw lost.signal.reason;
  } finally {
    // A silently dead session never answers the goodbye: do not wait on it for ever.
    await Promise.race([
      session.end().catch(() => {}),
      sleep(leaderSessionSetupTimeoutMs, undefined, { ref: false }),
    ]);
  }
}

/**
 * Asks the session `SELECT 1` every `everyMs` while the term lasts, which keeps it from being idle, and
 * checks that it is alive: no answer within `answerWithinMs` ends the term. The check queues behind at most
 * the one statement the lead has in flight, itself bounded by `queryTimeoutMs`, so twice that bound never
 * cuts a live session short. An error the server sent (the lead's transaction failed) is an answer: the
 * session is alive. Without a bound (a lead whose statements may run for minutes) nothing is checked, and
 * a touch still queued behind a long statement is not followed by another: that statement keeps the
 * session busy meanwhile.
 */
async function touchSession(
  session: pg.Client,
  term: AbortSignal,
  lost: AbortController,
  timing: { everyMs: number; answerWithinMs: number | undefined },
): Promise<void> {
  let touchQueued = false;
  while (!term.aborted) {
    await sleep(timing.everyMs, undefined, { signal: term }).catch(() => {});
    if (term.aborted) return;
    if (timing.answerWithinMs === undefined) {
      if (touchQueued) continue;
      touchQueued = true;
      session
        .query("SELECT 1")
        .catch(() => {}) // A lost session shows at the lead's next statement.
        .finally(() => {
          touchQueued = false;
        });
      continue;
    }
    try {
      await session.query(timed({ text: "SELECT 1" }, timing.answerWithinMs));
    } catch (error) {
      if (!(error instanceof pg.DatabaseError)) lost.abort(error);
    }
  }
}

/**
 * `query` bounded by its own timeout, counted from when it is queued on the client. pg honours a
 * statement's `query_timeout` over the client's (lib/client.js) but its types do not declare it.
 */
function timed(query: pg.QueryConfig, timeoutMs: number): pg.QueryConfig {
  return Object.assign(query, { query_timeout: timeoutMs });
}
