import type { Queue } from "bullmq";
import type pg from "pg";
import { allProjections } from "../../projections";
import { pendingChargesTable } from "../../projections/balances";
import { usageChargesQueueName } from "../billing/queue/charge-queue";
import { openQueue, type QueueBackend } from "../billing/queue/queue-backend";
import type { EventStore } from "../ledger/store/event-store";
import { compareLogPositions, type LogPosition } from "../ledger/store/log-position";

/**
 * One question per dependency the gateway needs, each answered within a bound or failing: readiness and
 * the scrape-time gauges (queue depth, projection lag, the holds' log lag, the pending charges' age) ask the
 * same probes.
 */

export const queueDepthStates = ["waiting", "active", "delayed", "failed"] as const;
export type QueueDepth = Record<(typeof queueDepthStates)[number], number>;

export interface DependencyProbes {
  /**
   * Resolves when PostgreSQL answers a query and would take writes; rejects with DatabaseReadOnlyError when it
   * answers read-only (a standby, or `default_transaction_read_only`): every hold would fail there.
   */
  postgresql(): Promise<void>;
  /** The charge queue's job counts; rejects when the queue's store does not answer. */
  queueDepth(): Promise<QueueDepth>;
  /** Age in seconds of the oldest event a projection has not applied yet; 0 when they are all current. */
  projectionLagSeconds(): Promise<number>;
  /**
   * Age in seconds of the oldest settled hold row not yet written to the log (settled-holds-log.ts); 0 when
   * none waits. Its usage is neither in the log nor charged until it is.
   */
  holdsLogLagSeconds(): Promise<number>;
  /**
   * Age in seconds of the oldest usage recorded and not charged yet; 0 when none waits. A usage the
   * reconciler cannot charge (no price at its start) stays pending, and only this shows it.
   */
  pendingChargeAgeSeconds(): Promise<number>;
  close(): Promise<void>;
}

export class ProbeTimeoutError extends Error {
  override readonly name = "ProbeTimeoutError";
}

/** Rejects with ProbeTimeoutError when `promise` takes longer than `timeoutMs`. */
export function within<T>(promise: Promise<T>, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new ProbeTimeoutError(`no answer within ${timeoutMs} ms`)), timeoutMs);
    timer.unref();
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

export class DatabaseReadOnlyError extends Error {
  override readonly name = "DatabaseReadOnlyError";
}

export class ProjectionsNotPreparedError extends Error {
  override readonly name = "ProjectionsNotPreparedError";
}

export function createDependencyProbes(options: {
  pool: pg.Pool;
  store: EventStore;
  queueBackend: QueueBackend;
  clock?: () => Date;
}): DependencyProbes {
  const clock = options.clock ?? (() => new Date());
  // Opened on first use: its connection is the probe's own, so a stuck producer cannot hide a live store.
  let queue: Queue | undefined;
  const queueOf = () => {
    if (!queue) {
      queue = openQueue(usageChargesQueueName, options.queueBackend, {
        role: "request-path",
        defaultJobOptions: {},
      });
      // Connection errors are what the probe reports; unhandled they would crash the process.
      queue.on("error", () => {});
    }
    return queue;
  };
  return {
    async postgresql() {
      const { rows } = await options.pool.query<{ read_only: string }>(
        "SELECT current_setting('transaction_read_only') AS read_only",
      );
      if (rows[0]?.read_only === "on") throw new DatabaseReadOnlyError("PostgreSQL takes no writes");
    },
    async queueDepth() {
      const counts = await queueOf().getJobCounts(...queueDepthStates);
      return Object.fromEntries(queueDepthStates.map((state) => [state, counts[state] ?? 0])) as QueueDepth;
    },
    async projectionLagSeconds() {
      const lowest = await lowestCheckpoint(options.pool);
      const [oldest] = await options.store.readAll({ after: lowest, limit: 1 });
      if (!oldest) return 0;
      return Math.max(0, (clock().getTime() - oldest.recordedAt.getTime()) / 1_000);
    },
    async holdsLogLagSeconds() {
      // Rows leave the table as they are logged, so the settled ones are few unless the writers fail.
      const oldest = await options.pool.query<{ settled_at: Date | null }>(
        "SELECT min(settled_at) AS settled_at FROM request_holds WHERE settled_at IS NOT NULL",
      );
      const settledAt = oldest.rows[0]?.settled_at;
      return settledAt ? Math.max(0, (clock().getTime() - settledAt.getTime()) / 1_000) : 0;
    },
    async pendingChargeAgeSeconds() {
      // By the index on recorded_at: one entry read, however long the backlog.
      const oldest = await options.pool.query<{ recorded_at: Date | null }>(
        `SELECT min(recorded_at) AS recorded_at FROM ${pendingChargesTable.name}`,
      );
      const recordedAt = oldest.rows[0]?.recorded_at;
      return recordedAt ? Math.max(0, (clock().getTime() - recordedAt.getTime()) / 1_000) : 0;
    },
    async close() {
      await queue?.close().catch(() => {});
    },
  };
}

/** The checkpoint of the projection furthest behind; every projection must have one. */
async function lowestCheckpoint(pool: pg.Pool): Promise<LogPosition> {
  const result = await pool.query<{ projection: string; commit_position: string; prepare_position: string }>(
    "SELECT projection, commit_position::text, prepare_position::text FROM projection_checkpoints",
  );
  const byName = new Map(result.rows.map((row) => [row.projection, row]));
  let lowest: LogPosition | undefined;
  for (const projection of allProjections) {
    const row = byName.get(projection.name);
    if (!row) throw new ProjectionsNotPreparedError(`projection ${projection.name} is not prepared`);
    const position = { commit: BigInt(row.commit_position), prepare: BigInt(row.prepare_position) };
    if (!lowest || compareLogPositions(position, lowest) < 0) lowest = position;
  }
  if (!lowest) throw new Error("no projections are defined");
  return lowest;
}
