import {
  KeyCollector,
  type ProjectionDefinition,
  type ProjectionRows,
  type Row,
  rowKeyOf,
  type TableDefinition,
} from "../projection/projection";
import type { EventStore, RecordedEvent } from "../store/event-store";
import { compareLogPositions, type LogPosition, logStart } from "../store/log-position";
import type { ShadowTables } from "./shadow-tables";

/**
 * Folds pages of the log by the projections' TypeScript folds into shadow tables (written with COPY): the
 * in-memory rebuild's fold, and the one `ledger verify` compares the live rows with.
 *
 * Memory is bounded by `rowsInMemoryMax` rows plus two pages of events, whatever the ledger's size: when
 * the fold holds more rows, they are written out (spilled) and the fold goes on, loading back from the
 * shadow tables, one query per table and page, only the rows the next page reads.
 */

/** Whether a projection folds an event: by default, every event of a type it handles. */
export type FoldsEvent = (projection: ProjectionDefinition, event: RecordedEvent) => boolean;

export interface ShadowFoldOptions {
  rowsInMemoryMax: number;
  onProgress?: (appliedEvents: number) => void;
  folds?: FoldsEvent;
}

const handled: FoldsEvent = (projection, event) => projection.handles.has(event.type);

export async function foldIntoShadows(
  shadows: ShadowTables,
  pages: AsyncIterable<RecordedEvent[]>,
  projections: readonly ProjectionDefinition[],
  options: ShadowFoldOptions,
): Promise<{ eventCount: number; last: LogPosition }> {
  const folds = options.folds ?? handled;
  const rows = new FoldRows();
  let applied = 0;
  let last = logStart;
  const iterator = pages[Symbol.asyncIterator]();
  let next = iterator.next();
  for (;;) {
    const page = await next;
    if (page.done) break;
    const events = page.value;
    // Ask for the next page before folding this one: the database streams on meanwhile.
    next = iterator.next();
    await loadReads(shadows, rows, projections, events, folds);
    for (const event of events) {
      for (const projection of projections) {
        if (folds(projection, event)) projection.evolve(rows, event);
      }
    }
    if (rows.size > options.rowsInMemoryMax) await spill(shadows, rows, (options.rowsInMemoryMax * 3) / 4);
    applied += events.length;
    last = events[events.length - 1]!.position;
    options.onProgress?.(applied);
  }
  await spill(shadows, rows);
  return { eventCount: applied, last };
}

/** The log in pages of `readAll`, for stores without a whole-log reader; up to `upTo` when given. */
export async function* pagesOf(
  store: EventStore,
  pageSize: number,
  upTo?: LogPosition,
): AsyncGenerator<RecordedEvent[]> {
  let after: LogPosition = logStart;
  for (;;) {
    const events = await store.readAll({ after, limit: pageSize });
    if (events.length === 0) return;
    const within = upTo ? events.filter((event) => compareLogPositions(event.position, upTo) <= 0) : events;
    if (within.length > 0) yield within;
    if (within.length < events.length) return;
    after = events[events.length - 1]!.position;
  }
}

/**
 * The fold's rows in memory: a row, or null once deleted. Rows changed since the last spill are dirty.
 * A table whose rows were written out and dropped from memory is evicted: a read of one of its rows that
 * is not in memory is loaded first (`loadReads`); write-only tables are never read.
 */
class FoldRows implements ProjectionRows {
  readonly tables = new Map<TableDefinition, Map<string, Row | null>>();
  readonly dirty = new Map<TableDefinition, Set<string>>();
  readonly evicted = new Set<TableDefinition>();
  size = 0;

  get<R extends Row>(table: TableDefinition<R>, key: Partial<R>): R | undefined {
    const definition = table as TableDefinition;
    const rowKey = rowKeyOf(definition, key);
    if (definition.writeOnly) throw new Error(`${definition.name} is write-only, yet a fold read it`);
    const rows = this.tables.get(definition);
    return (rows?.get(rowKey) ?? undefined) as R | undefined;
  }

  has(table: TableDefinition, rowKey: string): boolean {
    return this.tables.get(table)?.has(rowKey) ?? false;
  }

  put<R extends Row>(table: TableDefinition<R>, row: R): void {
    this.set(table as TableDefinition, rowKeyOf(table as TableDefinition, row), row, true);
  }

  delete<R extends Row>(table: TableDefinition<R>, key: Partial<R>): void {
    this.set(table as TableDefinition, rowKeyOf(table as TableDefinition, key), null, true);
  }

  set(table: TableDefinition, rowKey: string, row: Row | null, dirty: boolean): void {
    let rows = this.tables.get(table);
    if (!rows) {
      rows = new Map();
      this.tables.set(table, rows);
    }
    if (!rows.has(rowKey)) this.size++;
    rows.set(rowKey, row);
    if (!dirty) return;
    let keys = this.dirty.get(table);
    if (!keys) {
      keys = new Set();
      this.dirty.set(table, keys);
    }
    keys.add(rowKey);
  }

  /** Drops a written-out table's rows from memory. */
  evict(table: TableDefinition): void {
    this.size -= this.tables.get(table)?.size ?? 0;
    this.tables.delete(table);
    this.evicted.add(table);
  }
}

/** Loads, from shadows that already hold rows, the rows this page's fold will read. */
async function loadReads(
  shadows: ShadowTables,
  rows: FoldRows,
  projections: readonly ProjectionDefinition[],
  events: readonly RecordedEvent[],
  folds: FoldsEvent,
): Promise<void> {
  // Only folds that read a table they no longer hold whole run twice: once to learn their reads.
  const reading = projections.filter((projection) =>
    projection.tables.some((table) => rows.evicted.has(table) && !table.writeOnly),
  );
  if (reading.length === 0) return;
  const collector = new KeyCollector();
  for (const event of events) {
    for (const projection of reading) {
      if (folds(projection, event)) projection.evolve(collector, event);
    }
  }
  for (const [table, keys] of collector.reads) {
    if (!rows.evicted.has(table)) continue;
    const missing = [...keys].filter(([rowKey]) => !rows.has(table, rowKey)).map(([, key]) => key);
    for (const row of await shadows.readRows(table, missing)) {
      rows.set(table, rowKeyOf(table, row), row, false);
    }
  }
}

/**
 * Writes the rows changed since the last spill to the shadows. Then, unless this is the last spill,
 * frees memory: every write-only table (never read back), then the largest others (read back by key as
 * later pages need them) until at most `rowsToKeep` rows remain. Tables such as balances stay while they
 * fit: evicting a table the folds read makes every later page fold twice to learn what to load.
 */
async function spill(shadows: ShadowTables, rows: FoldRows, rowsToKeep?: number): Promise<void> {
  for (const [table, keys] of rows.dirty) {
    const resident = rows.tables.get(table) ?? new Map<string, Row | null>();
    const changes = new Map<string, Row | null>();
    for (const rowKey of keys) changes.set(rowKey, resident.get(rowKey) ?? null);
    await shadows.write(table, changes);
  }
  rows.dirty.clear();
  if (rowsToKeep === undefined) return;
  // Write-only tables always go: they cost nothing later. Tables the folds read stay while they fit.
  for (const table of [...rows.tables.keys()]) if (table.writeOnly) rows.evict(table);
  const bySize = [...rows.tables].sort(([, left], [, right]) => right.size - left.size);
  for (const [table] of bySize) {
    if (rows.size <= rowsToKeep) break;
    rows.evict(table);
  }
}
