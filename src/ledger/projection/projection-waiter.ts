import type pg from "pg";
import type { Logger } from "pino";
import { ListenConnection } from "../../database/listen-connection";
import { compareLogPositions, isAtOrAfter, type LogPosition } from "../store/log-position";
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
 * Any process can wait, whichever process runs the projections: checkpoints are learned from the runner's
 * NOTIFY after each batch (which names where its checkpoints stand), read from PostgreSQL when that is not
 * enough, and polled as a fallback.
 */
export class ProjectionWaiter {
  private readonly localReadModels: LocalReadModel[] = [];
  private waiters = new Set<{ target: LogPosition; projections: readonly string[]; resolve: () => void }>();
  private listener: ListenConnection | undefined;
  private pollTimer: NodeJS.Timeout | undefined;
  private refreshing: Promise<void> | undefined;
  private closed = false;
  /** Checkpoints read or announced. They only move forward, so "reached" by these is reached for good. */
  private known = new Map<string, LogPosition>();
  /**
   * True while `known` has heard of every batch committed since it was last read: then a target it has not
   * reached will be announced when reached, and waiting for that needs no read. A notification that names
   * no checkpoint, or a lost LISTEN connection, makes it false until the next read.
   */
  private knownIsCurrent = false;
  /** Moves whenever `known` may have missed a batch, so a read that overlapped it does not vouch for it. */
  private missedGeneration = 0;

  constructor(
    private readonly pool: Pick<pg.Pool, "query">,
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
      if (change?.projections) this.learned(change.projections, change.to);
      else {
        this.knownIsCurrent = false;
        this.missedGeneration += 1;
        void this.refresh();
      }
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
    // Known and current: the batch that reaches the target will be announced (the poll stays the fallback).
    if (!(this.knownIsCurrent && this.listener?.connected)) {
      await this.readCheckpoints();
      // What was read, with anything announced meanwhile.
      if (allReached(this.known, target, projections)) return;
    }
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
    try {
      await this.readCheckpoints();
    } catch {
      return; // The poll, or the next notification, tries again.
    }
    this.resolveKnownReached();
  }

  private resolveKnownReached(): void {
    for (const waiter of [...this.waiters]) {
      if (allReached(this.known, waiter.target, waiter.projections)) waiter.resolve();
    }
  }

  /**
   * A batch committed with these checkpoints at `position` or later. A waiter that needs a checkpoint the
   * notification does not name (another runner's) is answered by a read.
   */
  private learned(projections: readonly string[], position: LogPosition): void {
    for (const name of projections) this.advanceKnown(name, position);
    this.resolveKnownReached();
    const named = new Set(projections);
    if ([...this.waiters].some((waiter) => waiter.projections.some((name) => !named.has(name)))) {
      void this.refresh();
    }
  }

  private advanceKnown(name: string, position: LogPosition): void {
    const before = this.known.get(name);
    if (before === undefined || compareLogPositions(position, before) > 0) this.known.set(name, position);
  }

  /**
   * Reads every checkpoint into `known` (never moving one back: an announcement may have overtaken the
   * read). `known` is current after it when the LISTEN connection was up throughout and heard no
   * notification that named nothing.
   */
  private async readCheckpoints(): Promise<void> {
    const generation = this.missedGeneration;
    const listening = this.listener?.connected === true;
    const result = await this.pool.query<{
      projection: string;
      commit_position: string;
      prepare_position: string;
    }>({
      name: "projection-checkpoints-read",
      text: "SELECT projection, commit_position, prepare_position FROM projection_checkpoints",
    });
    for (const row of result.rows) {
      this.advanceKnown(row.projection, {
        commit: BigInt(row.commit_position),
        prepare: BigInt(row.prepare_position),
      });
    }
    if (listening && this.listener?.connected && generation === this.missedGeneration) {
      this.knownIsCurrent = true;
    }
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
