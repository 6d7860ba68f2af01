import type pg from "pg";
import type { Logger } from "pino";
import { ListenConnection } from "../../database/listen-connection";
import { isAtOrAfter, type LogPosition } from "../store/log-position";
import { type CheckpointChange, parseCheckpointNotification } from "./checkpoint-notification";
import { checkpointChannel } from "./projection-runner";

/**
 * An in-memory copy of some projections kept by this process. The waiter tells it when checkpoints move,
 * and a command waiting for those projections also waits for the copy, so read-your-writes holds for the
 * copy too.
 */
export interface LocalReadModel {
  readonly projections: readonly string[];
  /**
   * Checkpoints moved: by the batch `change` names, or, when it is undefined (a reconnect, a runner that
   * did not say, a batch that touched too much), by anything.
   */
  checkpointsAdvanced(change?: CheckpointChange): void;
  catchUpTo(target: LogPosition): Promise<void>;
}

/**
 * Read-your-writes: a command that appended at position P waits until the projections have applied P.
 * Any process can wait, whichever process runs the projections: checkpoints are read from PostgreSQL,
 * woken by the runner's NOTIFY and polled as a fallback.
 */
export class ProjectionWaiter {
  private readonly localReadModels: LocalReadModel[] = [];
  private waiters = new Set<{ target: LogPosition; projections: readonly string[]; resolve: () => void }>();
  private listener: ListenConnection | undefined;
  private pollTimer: NodeJS.Timeout | undefined;
  private refreshing: Promise<void> | undefined;
  private closed = false;
  /** Checkpoints last read. They only move forward, so "reached" by these is reached for good. */
  private known = new Map<string, LogPosition>();

  constructor(
    private readonly pool: pg.Pool,
    private readonly connectionString: string,
    private readonly pollIntervalMs: number,
    private readonly options: { logger?: Logger } = {},
  ) {}

  /**
   * Listens for checkpoint notifications, and hands each local copy what the batch touched. The connection
   * is re-established whenever it drops, and then every local copy re-reads everything: a checkpoint that
   * moved while it was away was never announced.
   */
  async start(): Promise<void> {
    const checkpointsAdvanced = (change: CheckpointChange | undefined) => {
      for (const model of this.localReadModels) model.checkpointsAdvanced(change);
      void this.refresh();
    };
    this.listener = await ListenConnection.open({
      connectionString: this.connectionString,
      channel: checkpointChannel,
      applicationName: "projection-waiter",
      onNotification: (payload) => checkpointsAdvanced(parseCheckpointNotification(payload)),
      onReconnected: () => checkpointsAdvanced(undefined),
      logger: this.options.logger?.child({ component: "projection-waiter" }),
    });
    if (this.closed) await this.listener.close();
  }

  addLocalReadModel(model: LocalReadModel): void {
    this.localReadModels.push(model);
  }

  /**
   * Resolves once every named projection has applied `target`, and every local copy of one of them has
   * caught up with it; rejects after `timeoutMs`.
   */
  async waitFor(target: LogPosition, projections: readonly string[], timeoutMs: number): Promise<void> {
    const startedAtMs = Date.now();
    await this.waitForProjections(target, projections, timeoutMs);
    const copies = this.localReadModels.filter((model) =>
      model.projections.some((name) => projections.includes(name)),
    );
    if (copies.length === 0) return;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(
        () => reject(new ProjectionLagError(projections, timeoutMs)),
        Math.max(0, timeoutMs - (Date.now() - startedAtMs)),
      );
    });
    const caughtUp = Promise.all(copies.map((model) => model.catchUpTo(target)));
    // Past the deadline nobody awaits it any more; its failure must not become an unhandled rejection.
    caughtUp.catch(() => {});
    try {
      await Promise.race([caughtUp, late]);
    } finally {
      clearTimeout(timer);
    }
  }

  private async waitForProjections(
    target: LogPosition,
    projections: readonly string[],
    timeoutMs: number,
  ): Promise<void> {
    if (allReached(this.known, target, projections)) return;
    if (await this.reached(target, projections)) return;
    await new Promise<void>((resolve, reject) => {
      const waiter = {
        target,
        projections,
        resolve: () => {
          clearTimeout(timer);
          this.waiters.delete(waiter);
          resolve();
        },
      };
      const timer = setTimeout(() => {
        this.waiters.delete(waiter);
        reject(new ProjectionLagError(projections, timeoutMs));
      }, timeoutMs);
      this.waiters.add(waiter);
      this.ensurePolling();
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.pollTimer);
    await this.listener?.close();
  }

  private ensurePolling(): void {
    this.pollTimer ??= setInterval(() => {
      if (this.waiters.size === 0) {
        clearInterval(this.pollTimer);
        this.pollTimer = undefined;
        return;
      }
      void this.refresh();
    }, this.pollIntervalMs);
    this.pollTimer.unref();
  }

  private refresh(): Promise<void> {
    if (this.waiters.size === 0) return Promise.resolve();
    this.refreshing ??= this.resolveReached().finally(() => {
      this.refreshing = undefined;
    });
    return this.refreshing;
  }

  private async resolveReached(): Promise<void> {
    const positions = await this.readCheckpoints().catch(() => undefined);
    if (!positions) return;
    for (const waiter of [...this.waiters]) {
      if (allReached(positions, waiter.target, waiter.projections)) waiter.resolve();
    }
  }

  private async reached(target: LogPosition, projections: readonly string[]): Promise<boolean> {
    return allReached(await this.readCheckpoints(), target, projections);
  }

  private async readCheckpoints(): Promise<Map<string, LogPosition>> {
    const result = await this.pool.query<{
      projection: string;
      commit_position: string;
      prepare_position: string;
    }>({
      name: "projection-checkpoints-read",
      text: "SELECT projection, commit_position, prepare_position FROM projection_checkpoints",
    });
    const positions = new Map(
      result.rows.map((row) => [
        row.projection,
        { commit: BigInt(row.commit_position), prepare: BigInt(row.prepare_position) },
      ]),
    );
    this.known = positions;
    return positions;
  }
}

function allReached(
  positions: Map<string, LogPosition>,
  target: LogPosition,
  projections: readonly string[],
): boolean {
  return projections.every((name) => {
    const position = positions.get(name);
    return position !== undefined && isAtOrAfter(position, target);
  });
}

export class ProjectionLagError extends Error {
  override readonly name = "ProjectionLagError";
  constructor(projections: readonly string[], timeoutMs: number) {
    super(`projections ${projections.join(", ")} did not catch up within ${timeoutMs} ms`);
  }
}
