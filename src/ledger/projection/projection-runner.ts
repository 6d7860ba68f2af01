import { setTimeout as sleepFor } from "node:timers/promises";
import type pg from "pg";
import { advisoryLockKeys } from "../../database/advisory-lock-keys";
import { contendForLead } from "../../database/advisory-lock-leader";
import { inOneTransaction } from "../../database/in-one-transaction";
import { assert } from "../../kernel/assert";
import { limits } from "../../kernel/limits";
import { type EventHead, headOf } from "../events";
import { forgetBatchTables } from "../rebuild/parsed-events";
import { rebuildInSql } from "../rebuild/rebuild-in-sql";
import type { EventStore, RecordedEvent, RecordedEventHead } from "../store/event-store";
import { compareLogPositions, type LogPosition, logStart } from "../store/log-position";
import { anythingChanged, formatCheckpointNotification } from "./checkpoint-notification";
import type { ProjectionDefinition } from "./projection";
import { applyProjectionBatch } from "./projection-batch";
import { applySqlFoldBatch } from "./projection-batch-sql";
import { addMissingColumns, createTableStatements } from "./projection-tables";

/**
 * Runs every projection from the log. One process at a time leads, holding the runner lock on a dedicated
 * session (advisory-lock-leader.ts); the others stand by and take over if it goes away. Each batch writes
 * the rows of every projection and their checkpoints in one transaction, on that session, so a crash never
 * applies an event twice and never skips one; a deposed runner that has not noticed yet fails at its
 * checkpoints' compare-and-set. On the PostgreSQL store the projections with SQL folds fold each batch in
 * the database (projection-batch-sql.ts); the others, and every projection on EventStoreDB, event by event
 * in this process (projection-batch.ts). Where the store reads heads (PostgreSQL), the runner reads only
 * each event's head — its place, type and account — and reads a batch's whole events only when a
 * projection folds it here.
 */

export const checkpointChannel = "projection_checkpoints";

export interface ProjectionRunnerOptions {
  pool: pg.Pool;
  /** For the dedicated lock connection. */
  connectionString: string;
  store: EventStore;
  projections: readonly ProjectionDefinition[];
  batchSizeMax: number;
  /**
   * After a batch smaller than `batchSizeMax`, wait this long before reading on: under light load the
   * events of several requests are then applied in one transaction instead of one each. 0 by default.
   */
  lingerMs?: number;
  /** How often a stand-by process tries to take over. */
  standbyRetryMs: number;
  /** Events per chunk when a projection whose definition changed is refolded in SQL. */
  refoldChunkEventsMax?: number;
  /** Called when the runner starts failing (a lost session, a batch that failed), not on every retry. */
  onError?: (error: unknown) => void;
  /** Called when it works again after `onError`: leading, or standing by behind another process. */
  onRecovered?: () => void;
  /**
   * Called when a term ends at once because a newer release folded the projections (rollout): not a
   * failure to recover from, but this process standing aside until that release leads or it is rebuilt.
   */
  onStandingAside?: (reason: ProjectionsOfNewerReleaseError) => void;
  onProgress?: (position: LogPosition, eventCount: number) => void;
  /**
   * Names what a batch's events touched (the service: their accounts); each batch's NOTIFY carries them
   * with the batch's range, so local copies re-read only that. Without it, or past
   * `touchedPerNotificationMax` names, the NOTIFY says "anything may have changed".
   */
  touchedBy?: (heads: readonly EventHead[]) => ReadonlySet<string>;
  /**
   * Of what `touchedBy` names, what more than its funds changed (the service: the accounts whose keys may
   * have changed); the NOTIFY carries it so copies re-read only the funds of the rest.
   */
  keysChangedBy?: (heads: readonly EventHead[]) => ReadonlySet<string>;
  /** Whether the batch may change what requests are priced with; the NOTIFY says so (pricing copies). */
  pricingChangedBy?: (heads: readonly EventHead[]) => boolean;
  touchedPerNotificationMax?: number;
}

interface Checkpoint {
  definitionVersion: number;
  position: LogPosition;
}

/** Consecutive events of the log: their heads, and the whole events where they were read. */
interface LogBatch {
  heads: readonly RecordedEventHead[];
  events?: readonly RecordedEvent[];
}

const batchOfEvents = (events: readonly RecordedEvent[]): LogBatch => ({
  heads: events.map((event) => ({ ...headOf(event), position: event.position })),
  events,
});

export class ProjectionRunner {
  private checkpoints = new Map<string, Checkpoint>();
  private leader = false;

  constructor(private readonly options: ProjectionRunnerOptions) {}

  /**
   * Creates projection tables, and refolds any projection whose definition version changed (or that has
   * no checkpoint yet) from the start of the log; true when one was. Run by the lock holder only, inside a
   * transaction that also catches the refolded projections up, so no reader ever sees them emptied.
   *
   * `refold: "sql"` (the leader's, where the events are in PostgreSQL) rebuilds each such projection that
   * has an SQL fold as `ledger rebuild` does, into shadow tables swapped in at the end, up to the log's
   * visible end: several times faster than its TypeScript fold, and no row of the old tables is deleted
   * one by one. Otherwise its rows are deleted and the caller's catch-up folds the whole log again.
   * A projection a newer release folded is never refolded back: that throws ProjectionsOfNewerReleaseError,
   * which ends a term at once (the lock is let go, and contended for again after the stand-by wait).
   */
  async prepare(client: pg.ClientBase, refold: "sql" | "events" = "events"): Promise<boolean> {
    for (const projection of this.options.projections) {
      for (const statement of projection.tables.flatMap(createTableStatements)) await client.query(statement);
    }
    await addMissingColumns(
      client,
      this.options.projections.flatMap((projection) => projection.tables),
    );
    const stored = await client.query<{
      projection: string;
      definition_version: number;
      commit_position: string;
      prepare_position: string;
    }>(
      "SELECT projection, definition_version, commit_position, prepare_position FROM projection_checkpoints",
    );
    const storedByName = new Map(stored.rows.map((row) => [row.projection, row]));
    // A newer release's worker folded these (a rollout, this process not replaced yet): refolding them at this
    // release's definitions would undo its tables under its gateways. Leading is left to that release.
    const newer = this.options.projections.filter(
      (projection) => (storedByName.get(projection.name)?.definition_version ?? 0) > projection.version,
    );
    if (newer.length > 0) throw new ProjectionsOfNewerReleaseError(newer, storedByName);
    this.checkpoints.clear();
    const stale: ProjectionDefinition[] = [];
    for (const projection of this.options.projections) {
      const row = storedByName.get(projection.name);
      if (row?.definition_version === projection.version) {
        this.checkpoints.set(projection.name, {
          definitionVersion: projection.version,
          position: { commit: BigInt(row.commit_position), prepare: BigInt(row.prepare_position) },
        });
      } else {
        stale.push(projection);
      }
    }
    // On an empty log (a new database) there is nothing to fold: the tables just created stand as they are.
    const inSql =
      refold === "sql" && this.options.store.kind === "postgresql" && (await this.logHasEvents())
        ? stale.filter((projection) => projection.sqlFold !== undefined)
        : [];
    const rebuilt =
      inSql.length > 0 ? (await rebuildInSql(client, inSql, this.refoldOptions())).last : logStart;
    for (const projection of stale) {
      const refolded = inSql.includes(projection);
      if (!refolded) await this.deleteRows(client, projection);
      const position = refolded ? rebuilt : logStart;
      await this.writeDefinitionCheckpoint(client, projection, position);
      this.checkpoints.set(projection.name, { definitionVersion: projection.version, position });
    }
    return stale.length > 0;
  }

  private async logHasEvents(): Promise<boolean> {
    return (await this.options.store.readAll({ limit: 1 })).length > 0;
  }

  private refoldOptions(): { chunkEventsMax: number } {
    return { chunkEventsMax: this.options.refoldChunkEventsMax ?? limits.rebuildChunkEventsMax };
  }

  /** Follows the log until the signal aborts; stands by while another process holds the lock. */
  async run(signal: AbortSignal): Promise<void> {
    await contendForLead(
      {
        connectionString: this.options.connectionString,
        lockKey: advisoryLockKeys.projectionRunner,
        applicationName: "projections",
        standbyRetryMs: this.options.standbyRetryMs,
        // A refold's statements may run for minutes; its own statements notice a lost session instead.
        queryTimeoutMs: "unbounded",
        lead: (session, term) => this.lead(session, term),
        onFailing: this.options.onError,
        onRecovered: this.options.onRecovered,
      },
      signal,
    );
  }

  /**
   * Applies everything up to the current end of the log, then returns. Each batch commits on its own,
   * unless `inTransaction`: then the caller's transaction holds them all.
   */
  async catchUp(client: pg.ClientBase, inTransaction = false): Promise<number> {
    let applied = 0;
    let next = this.readBatch(this.lowestCheckpoint());
    for (;;) {
      const batch = await next;
      if (batch.heads.length === 0) return applied;
      // Read the next page while this one is applied: the database and this process work side by side.
      next = this.readBatch(batch.heads[batch.heads.length - 1]!.position);
      // When the batch fails nobody awaits the read: its failure too (the database gone) must not be an
      // unhandled rejection, which would end the process.
      next.catch(() => {});
      await this.applyBatch(client, batch, !inTransaction);
      applied += batch.heads.length;
    }
  }

  private async readBatch(after: LogPosition): Promise<LogBatch> {
    const { store, batchSizeMax } = this.options;
    if (store.readAllHeads) return { heads: await store.readAllHeads({ after, limit: batchSizeMax }) };
    return batchOfEvents(await store.readAll({ after, limit: batchSizeMax }));
  }

  /**
   * The whole events of a batch read as heads: the same events, read again by place (the log below its
   * visible end never changes), or the batch fails and is retried.
   */
  private async eventsOf(batch: LogBatch, after: LogPosition): Promise<readonly RecordedEvent[]> {
    const events = await this.options.store.readAll({ after, limit: batch.heads.length });
    const last = batch.heads[batch.heads.length - 1]!.position;
    if (
      events.length !== batch.heads.length ||
      compareLogPositions(events[events.length - 1]!.position, last) !== 0
    )
      throw new Error("the log read again did not give the batch's events");
    return events;
  }

  /** True while this runner holds the lock and applies events. */
  get leading(): boolean {
    return this.leader;
  }

  lowestCheckpoint(): LogPosition {
    let lowest: LogPosition | undefined;
    for (const checkpoint of this.checkpoints.values()) {
      if (!lowest || compareLogPositions(checkpoint.position, lowest) < 0) lowest = checkpoint.position;
    }
    return lowest ?? logStart;
  }

  /**
   * One term: refolds and catches up in one transaction on the lock session (readers never see a projection
   * emptied), then applies each new batch there until the term ends.
   */
  private async lead(session: pg.Client, term: AbortSignal): Promise<void> {
    this.leader = true;
    try {
      try {
        await inOneTransaction(session, async () => {
          if (await this.prepare(session, "sql")) await this.catchUp(session, true);
        });
      } catch (error) {
        if (!(error instanceof ProjectionsOfNewerReleaseError)) throw error;
        this.options.onStandingAside?.(error);
        return;
      }
      const { store, batchSizeMax } = this.options;
      const apply = async (batch: LogBatch) => {
        await this.applyBatch(session, batch);
        const lingerMs = this.options.lingerMs ?? 0;
        if (lingerMs > 0 && batch.heads.length < batchSizeMax)
          await sleepFor(lingerMs, undefined, { signal: term }).catch(() => {});
      };
      const following = { after: this.lowestCheckpoint(), batchSizeMax, signal: term };
      if (store.subscribeToHeads)
        await store.subscribeToHeads({ ...following, handle: (heads) => apply({ heads }) });
      else await store.subscribe({ ...following, handle: (events) => apply(batchOfEvents(events)) });
    } finally {
      this.leader = false;
    }
  }

  private async applyBatch(client: pg.ClientBase, batch: LogBatch, ownTransaction = true): Promise<void> {
    const { heads } = batch;
    const from = this.lowestCheckpoint();
    const last = heads[heads.length - 1]!.position;
    // In the caller's transaction every NOTIFY is delivered at its commit, and PostgreSQL folds identical
    // ones: one "anything changed" then, rather than a payload per batch of a whole refold.
    const notification = ownTransaction ? this.notificationOf(from, last, heads) : anythingChanged;
    if (ownTransaction) await client.query("BEGIN");
    let events = batch.events;
    try {
      const inSql: ProjectionDefinition[] = [];
      for (const projection of this.options.projections) {
        const checkpoint = this.checkpoints.get(projection.name)!;
        if (this.foldsInSql(projection, checkpoint, from)) {
          inSql.push(projection);
          continue;
        }
        events ??= await this.eventsOf(batch, from);
        const pending = events.filter(
          (event) =>
            projection.handles.has(event.type) &&
            compareLogPositions(event.position, checkpoint.position) > 0,
        );
        await applyProjectionBatch(client, projection, pending);
      }
      // Within the caller's transaction an earlier batch may have parsed into the same tables.
      await applySqlFoldBatch(client, inSql, { after: from, events: heads }, !ownTransaction);
      await this.writeCheckpoints(client, last);
      await client.query({
        name: "projection-checkpoints-notify",
        text: "SELECT pg_notify($1, $2)",
        values: [checkpointChannel, notification],
      });
      if (ownTransaction) await client.query("COMMIT");
    } catch (error) {
      if (ownTransaction) await client.query("ROLLBACK").catch(() => {});
      forgetBatchTables(client);
      throw error;
    }
    for (const checkpoint of this.checkpoints.values()) {
      if (compareLogPositions(checkpoint.position, last) < 0) checkpoint.position = last;
    }
    this.options.onProgress?.(last, heads.length);
  }

  /**
   * On the PostgreSQL store a projection with an SQL fold folds each batch in SQL, unless its checkpoint
   * stands past the batch's start (just after it was refolded alone): then its own part of the batch is
   * folded event by event.
   */
  private foldsInSql(projection: ProjectionDefinition, checkpoint: Checkpoint, from: LogPosition): boolean {
    return (
      this.options.store.kind === "postgresql" &&
      projection.sqlFold !== undefined &&
      compareLogPositions(checkpoint.position, from) === 0
    );
  }

  /**
   * The batch applied everything after `from` (the lowest checkpoint) up to `to`; once it commits, every
   * checkpoint stands at `to` or later, which the payload says for the waiters (projection-waiter.ts).
   */
  private notificationOf(from: LogPosition, to: LogPosition, heads: readonly EventHead[]): string {
    const touchedBy = this.options.touchedBy;
    if (!touchedBy) return anythingChanged;
    const touchedMax = this.options.touchedPerNotificationMax ?? limits.touchedAccountsPerNotificationMax;
    const projections = this.options.projections.map((projection) => projection.name);
    const touched = touchedBy(heads);
    const keysChanged = this.options.keysChangedBy?.(heads);
    assert(
      keysChanged === undefined || [...keysChanged].every((name) => touched.has(name)),
      "an account whose keys changed was touched",
    );
    const pricingChanged = this.options.pricingChangedBy?.(heads);
    return formatCheckpointNotification(
      {
        from,
        to,
        touched,
        projections,
        ...(keysChanged ? { keysChanged } : {}),
        ...(pricingChanged === undefined ? {} : { pricingChanged }),
      },
      touchedMax,
    );
  }

  /**
   * Moves every checkpoint to `position`, but only from the value this runner last wrote: a runner that
   * lost its lock without noticing fails here instead of applying events a second time.
   */
  private async writeCheckpoints(client: pg.ClientBase, position: LogPosition): Promise<void> {
    const names: string[] = [];
    const previousCommits: string[] = [];
    const previousPrepares: string[] = [];
    for (const [name, checkpoint] of this.checkpoints) {
      if (compareLogPositions(checkpoint.position, position) >= 0) continue;
      names.push(name);
      previousCommits.push(String(checkpoint.position.commit));
      previousPrepares.push(String(checkpoint.position.prepare));
    }
    const result = await client.query({
      name: "projection-checkpoints-advance",
      text: `UPDATE projection_checkpoints checkpoint
       SET commit_position = $4, prepare_position = $5, updated_at = now()
       FROM unnest($1::text[], $2::bigint[], $3::bigint[]) AS previous(projection, commit_position, prepare_position)
       WHERE checkpoint.projection = previous.projection
         AND checkpoint.commit_position = previous.commit_position
         AND checkpoint.prepare_position = previous.prepare_position`,
      values: [names, previousCommits, previousPrepares, String(position.commit), String(position.prepare)],
    });
    if (result.rowCount !== names.length) {
      throw new Error("projection checkpoints moved under this runner: another runner is active");
    }
  }

  private async deleteRows(client: pg.ClientBase, projection: ProjectionDefinition): Promise<void> {
    // DELETE, not TRUNCATE: inside the caller's transaction readers keep seeing the old rows until commit.
    for (const table of projection.tables) await client.query(`DELETE FROM ${table.name}`);
  }

  private async writeDefinitionCheckpoint(
    client: pg.ClientBase,
    projection: ProjectionDefinition,
    position: LogPosition,
  ): Promise<void> {
    await client.query(
      `INSERT INTO projection_checkpoints (projection, definition_version, commit_position, prepare_position)
       VALUES ($1, $2, $3, $4)
       ON CONFLICT (projection) DO UPDATE
       SET definition_version = EXCLUDED.definition_version, commit_position = $3, prepare_position = $4,
           updated_at = now()`,
      [projection.name, projection.version, String(position.commit), String(position.prepare)],
    );
  }
}

/** The projections were folded at definitions newer than this process knows: it must not lead them. */
export class ProjectionsOfNewerReleaseError extends Error {
  override readonly name = "ProjectionsOfNewerReleaseError";
  constructor(
    projections: readonly ProjectionDefinition[],
    stored: ReadonlyMap<string, { definition_version: number }>,
  ) {
    const named = projections
      .map(
        (projection) =>
          `${projection.name} (v${stored.get(projection.name)?.definition_version}, this process knows v${projection.version})`,
      )
      .join(", ");
    super(
      `the projections ${named} are folded by a newer release: this process does not lead them; replace it with that release, or, to go back to this one, rebuild them with it (npm run ledger -- rebuild)`,
    );
  }
}
