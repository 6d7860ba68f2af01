import type pg from "pg";
import type { ProjectionDefinition, SqlFold } from "../projection/projection";
import { type LogPosition, logStart } from "../store/log-position";
import { visibleTransactionOrderBelow } from "../store/log-visibility";
import { createFoldedInlineFunds, foldChunkIntoInlineFunds } from "./fold-inline-funds";
import { type ChunkBounds, dropParsedChunk, parseChunk } from "./parsed-events";
import { ShadowTables, shadowName } from "./shadow-tables";

/**
 * Rebuilds projections by their SQL folds, inside the caller's transaction, from the PostgreSQL store's
 * own table: no event crosses the network or becomes a JavaScript object. The log is taken in chunks of
 * whole transactions, in log order; each chunk's events are parsed once (parsed-events.ts), every
 * projection's statements fold them into its shadow tables, and the progress is reported. Memory is the
 * database's to bound (temporary tables, sorts and hashes spill to disk), whatever the ledger's size.
 *
 * It is a second definition of each fold: `ledger verify` compares the result with `evolve`'s, and the
 * tests rebuild both ways.
 */

export interface SqlRebuildOptions {
  /** About this many events per chunk (chunks split the transactions' range, not an exact count). */
  chunkEventsMax: number;
  /**
   * Also fold the inline read models' money from the chunks (fold-inline-funds.ts), for
   * ledger_recompute_funds to finish: `beforeSwap` is given the transaction order they are folded up to.
   */
  foldInlineFunds?: boolean;
  /** Runs once the shadows are filled and indexed, before the live tables are locked and swapped. */
  beforeSwap?: (inlineFundsFoldedUpTo: bigint | undefined) => Promise<void>;
  onProgress?: (appliedEvents: number) => void;
}

export function sqlFoldsOf(projections: readonly ProjectionDefinition[]): SqlFold[] | undefined {
  const folds = projections.map((projection) => projection.sqlFold);
  return folds.every((fold) => fold !== undefined) ? folds : undefined;
}

export async function rebuildInSql(
  client: pg.ClientBase,
  projections: readonly ProjectionDefinition[],
  options: SqlRebuildOptions,
): Promise<{ eventCount: number; last: LogPosition }> {
  const folds = sqlFoldsOf(projections);
  if (!folds) throw new Error("every projection rebuilt in SQL needs an SQL fold");
  const shadows = new ShadowTables(
    client,
    projections.flatMap((projection) => projection.tables),
  );
  await shadows.create(new Set(folds.flatMap((fold) => fold.keyed ?? [])));

  // The planner prices json_to_record as nearly free, so it would never split a chunk's parse across
  // workers; handing parsed rows back from them is cheap next to parsing (half the time on two cores).
  await client.query("SET LOCAL parallel_setup_cost = 0");
  await client.query("SET LOCAL parallel_tuple_cost = 0");
  // A chunk's events lie together in the log's key order (appends come in that order), so reading its range
  // by the key costs its share of the log. At the default price of a random read the planner scans the
  // whole log instead, once per parsed table and chunk.
  await client.query("SET LOCAL random_page_cost = 1.1");
  const extent = await visibleLog(client);
  let applied = 0;
  let chunksFolded = 0;
  const foldInlineFunds = options.foldInlineFunds === true && extent !== undefined;
  if (foldInlineFunds) await createFoldedInlineFunds(client);
  if (extent) {
    for (const chunk of chunksOf(extent, options.chunkEventsMax)) {
      applied += await parseChunk(client, chunk);
      for (const fold of folds)
        for (const statement of fold.statements(shadowName)) await client.query(statement);
      if (foldInlineFunds) await foldChunkIntoInlineFunds(client);
      chunksFolded += 1;
      options.onProgress?.(applied);
    }
  }
  await dropParsedChunk(client);
  if (chunksFolded > 1)
    for (const fold of folds)
      for (const statement of fold.finish?.(shadowName) ?? []) await client.query(statement);
  const { beforeSwap } = options;
  await shadows.indexAndSwap(
    beforeSwap && (() => beforeSwap(foldInlineFunds ? extent.upToOrder : undefined)),
  );
  return { eventCount: applied, last: extent?.last ?? logStart };
}

export interface VisibleLog {
  /** The range of transaction orders of the events to fold: (after, upTo]. */
  afterOrder: bigint;
  upToOrder: bigint;
  last: LogPosition;
  estimatedEvents: number;
}

/**
 * The events the rebuild folds, by the store's visibility rule (postgres-event-store.ts): those of
 * transactions older than every running one, so that none lands later among them. Taken once, at the start.
 */
async function visibleLog(client: pg.ClientBase): Promise<VisibleLog | undefined> {
  const bound = await client.query<{ below: string }>(
    `SELECT (${visibleTransactionOrderBelow("transaction_order_offset")})::text AS below
     FROM ledger_settings`,
  );
  const below = bound.rows[0]!.below;
  const ends = await client.query<{
    first: string | null;
    last_order: string | null;
    last_position: string | null;
  }>(
    `SELECT (SELECT min(transaction_order) FROM ledger_events)::text AS first,
            last.transaction_order::text AS last_order, last.position::text AS last_position
     FROM (SELECT NULL) nothing
     LEFT JOIN LATERAL (
       SELECT transaction_order, position FROM ledger_events WHERE transaction_order < $1
       ORDER BY transaction_order DESC, position DESC LIMIT 1) last ON true`,
    [below],
  );
  const { first, last_order: lastOrder, last_position: lastPosition } = ends.rows[0]!;
  if (first === null || lastOrder === null || lastPosition === null) return undefined;
  // An estimate is enough to size chunks; a table never analyzed is analyzed first.
  let estimate = await estimatedEvents(client);
  if (estimate < 0) {
    await client.query("ANALYZE ledger_events");
    estimate = await estimatedEvents(client);
  }
  return {
    afterOrder: BigInt(first) - 1n,
    upToOrder: BigInt(lastOrder),
    last: { commit: BigInt(lastOrder), prepare: BigInt(lastPosition) },
    estimatedEvents: Math.max(estimate, 1),
  };
}

/** As the planner estimates a table's rows: its pages now, at the density the last ANALYZE saw; -1 if none. */
async function estimatedEvents(client: pg.ClientBase): Promise<number> {
  const result = await client.query<{ estimate: number }>(
    `SELECT CASE WHEN reltuples < 0 OR relpages = 0 THEN -1
                 ELSE reltuples / relpages * (pg_relation_size(oid) / current_setting('block_size')::integer)
            END::float8 AS estimate
     FROM pg_class WHERE oid = 'ledger_events'::regclass`,
  );
  return result.rows[0]!.estimate;
}

/** Splits the transactions' range evenly into as many chunks as the estimated events call for. */
export function* chunksOf(log: VisibleLog, chunkEventsMax: number): Generator<ChunkBounds> {
  const chunks = BigInt(Math.max(1, Math.ceil(log.estimatedEvents / chunkEventsMax)));
  const span = log.upToOrder - log.afterOrder;
  const step = span / chunks + (span % chunks === 0n ? 0n : 1n);
  for (let after = log.afterOrder; after < log.upToOrder; after += step) {
    const upTo = after + step < log.upToOrder ? after + step : log.upToOrder;
    yield { afterOrder: after, upToOrder: upTo };
  }
}
