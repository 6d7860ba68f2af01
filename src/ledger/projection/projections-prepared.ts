import { setTimeout as sleep } from "node:timers/promises";
import type pg from "pg";
import type { ProjectionDefinition } from "./projection";

interface ProjectionWaitOptions {
  pollIntervalMs: number;
  signal?: AbortSignal;
}

/**
 * For a process that reads projections but does not run them (`--role=gateway`): resolves once a runner
 * has prepared every projection at the definition version this code knows. The runner creates a
 * projection's tables and writes its checkpoint row in one transaction, so the row is the proof. Rejects
 * with `signal`'s reason once it aborts (the process is stopped while it waits: no worker may ever come).
 */
export function untilProjectionsPrepared(
  pool: pg.Pool,
  projections: readonly ProjectionDefinition[],
  options: ProjectionWaitOptions & {
    /** Told once, and again whenever what it waits for changes (a rollout moving on, a rebuild). */
    onWaiting: (notPrepared: NotPreparedProjection[]) => void;
  },
): Promise<void> {
  return untilNoneWaitedFor(pool, projections, (notPrepared) => notPrepared, options);
}

/**
 * For a process that runs projections and serves (the all-in-one role): resolves once every projection's
 * tables stand, folded at any version — on a new database, once a runner (this process's, or the one that
 * leads) has created them; the service reads them from its first request. An earlier or newer release's
 * tables stand too: the runner refolds the one in its transaction, and stands aside for the other.
 */
export function untilProjectionTablesStand(
  pool: pg.Pool,
  projections: readonly ProjectionDefinition[],
  options: ProjectionWaitOptions,
): Promise<void> {
  return untilNoneWaitedFor(
    pool,
    projections,
    (notPrepared) => notPrepared.filter(({ folded }) => folded === undefined),
    options,
  );
}

/** Polls the projections not prepared until `waitedFor` finds none among them, telling `onWaiting` of changes. */
async function untilNoneWaitedFor(
  pool: pg.Pool,
  projections: readonly ProjectionDefinition[],
  waitedFor: (notPrepared: NotPreparedProjection[]) => NotPreparedProjection[],
  options: ProjectionWaitOptions & { onWaiting?: (notPrepared: NotPreparedProjection[]) => void },
): Promise<void> {
  let reported: string | undefined;
  for (;;) {
    options.signal?.throwIfAborted();
    const waiting = waitedFor(await projectionsNotPrepared(pool, projections));
    if (waiting.length === 0) return;
    const waitingFor = JSON.stringify(waiting);
    if (waitingFor !== reported) {
      reported = waitingFor;
      options.onWaiting?.(waiting);
    }
    await sleep(options.pollIntervalMs, undefined, options.signal ? { signal: options.signal } : {});
  }
}

export interface NotPreparedProjection {
  name: string;
  /** The definition version its tables were folded at; undefined: none yet. */
  folded: number | undefined;
  /** The version this code knows. */
  known: number;
}

/**
 * The projections no runner has prepared at the definition version this code knows: none yet, an earlier
 * release's (`folded` below `known`, or undefined) or a newer one's (`folded` above it).
 */
export async function projectionsNotPrepared(
  pool: Pick<pg.Pool, "query">,
  projections: readonly ProjectionDefinition[],
): Promise<NotPreparedProjection[]> {
  const stored = await pool.query<{ projection: string; definition_version: number }>(
    "SELECT projection, definition_version FROM projection_checkpoints",
  );
  const versions = new Map(stored.rows.map((row) => [row.projection, row.definition_version]));
  return projections
    .filter((projection) => versions.get(projection.name) !== projection.version)
    .map((projection) => ({
      name: projection.name,
      folded: versions.get(projection.name),
      known: projection.version,
    }));
}
