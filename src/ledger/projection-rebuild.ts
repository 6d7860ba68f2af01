import type pg from "pg";
import type { EventStore, RecordedEvent } from "./event-store";
import { type LogPosition, logStart } from "./log-position";
import {
  KeyCollector,
  type ProjectionDefinition,
  type ProjectionRows,
  type Row,
  rowKeyOf,
  type TableDefinition,
} from "./projection";
import { copyRows } from "./projection-copy";
import { createTableStatements, loadRows } from "./projection-tables";

/**
 * Rebuilds projections at close to the database's own write speed, inside the caller's transaction:
 * the log is folded in memory, page by page, into new "shadow" tables written with COPY and indexed once
 * at the end; then each shadow replaces its live table. Readers see the old tables until the caller
 * commits (the swap's locks make them wait only for the renames and the commit).
 *
 * Memory is bounded by `rowsInMemoryMax` rows plus two pages of events, whatever the ledger's size: when
 * the fold holds more rows, they are written out (spilled) and the fold goes on, loading back from the
 * shadow tables, one query per table and page, only the rows the next page reads.
 */

export interface RebuildOptions {
  pageSizeMax: number;
  rowsInMemoryMax: number;
  onProgress?: (appliedEvents: number) => void;
}

const shadowSuffix = "__rebuild";

export async function rebuildIntoShadowTables(
  client: pg.ClientBase,
  store: EventStore,
  projections: readonly ProjectionDefinition[],
  options: RebuildOptions,
): Promise<{ eventCount: number; last: LogPosition }> {
  const tables = projections.flatMap((projection) => projection.tables);
  const shadows = new ShadowTables(client, tables);
  await shadows.create();
  const rows = new FoldRows();
  let applied = 0;
  let last = logStart;
  const pages = (store.readWholeLog?.(options.pageSizeMax) ?? pagesOf(store, options.pageSizeMax))[
    Symbol.asyncIterator
  ]();
  let next = pages.next();
  for (;;) {
    const page = await next;
    if (page.done) break;
    const events = page.value;
    // Ask for the next page before folding this one: the database streams on meanwhile.
    next = pages.next();
    await shadows.loadReads(rows, projections, events);
    for (const event of events) {
      for (const projection of projections) {
        if (projection.handles.has(event.type)) projection.evolve(rows, event);
      }
    }
    if (rows.size > options.rowsInMemoryMax) await shadows.spill(rows, (options.rowsInMemoryMax * 3) / 4);
    applied += events.length;
    last = events[events.length - 1]!.position;
    options.onProgress?.(applied);
  }
  await shadows.spill(rows);
  await shadows.indexAndSwap();
  return { eventCount: applied, last };
}

async function* pagesOf(store: EventStore, pageSize: number): AsyncGenerator<RecordedEvent[]> {
  let after: LogPosition = logStart;
  for (;;) {
    const events = await store.readAll({ after, limit: pageSize });
    if (events.length === 0) return;
    yield events;
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

class ShadowTables {
  /** Tables with rows in their shadow already: reads may need them, writes must merge. */
  private readonly spilled = new Set<TableDefinition>();

  constructor(
    private readonly client: pg.ClientBase,
    private readonly tables: readonly TableDefinition[],
  ) {}

  async create(): Promise<void> {
    for (const table of this.tables) {
      // The live table first, so that a ledger rebuilt before any runner started has one to replace.
      for (const statement of createTableStatements(table)) await this.client.query(statement);
      await this.client.query(`DROP TABLE IF EXISTS ${shadowName(table)}`);
      // No key, no index while the rows go in: built once at the end, by sorting, not row by row.
      await this.client.query(`CREATE TABLE ${shadowName(table)} (LIKE ${table.name} INCLUDING DEFAULTS)`);
    }
  }

  /** Loads, from shadows that already hold rows, the rows this page's fold will read. */
  async loadReads(
    rows: FoldRows,
    projections: readonly ProjectionDefinition[],
    events: readonly RecordedEvent[],
  ) {
    // Only folds that read a table they no longer hold whole run twice: once to learn their reads.
    const reading = projections.filter((projection) =>
      projection.tables.some((table) => rows.evicted.has(table) && !table.writeOnly),
    );
    if (reading.length === 0) return;
    const collector = new KeyCollector();
    for (const event of events) {
      for (const projection of reading) {
        if (projection.handles.has(event.type)) projection.evolve(collector, event);
      }
    }
    for (const [table, keys] of collector.reads) {
      if (!rows.evicted.has(table)) continue;
      const missing = [...keys].filter(([rowKey]) => !rows.has(table, rowKey)).map(([, key]) => key);
      for (const row of await loadRows(this.client, shadowDefinition(table), missing)) {
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
  async spill(rows: FoldRows, rowsToKeep?: number): Promise<void> {
    for (const [table, keys] of rows.dirty) {
      const resident = rows.tables.get(table) ?? new Map<string, Row | null>();
      const changes = new Map<string, Row | null>();
      for (const rowKey of keys) changes.set(rowKey, resident.get(rowKey) ?? null);
      if (!this.spilled.has(table)) {
        await copyRows(this.client, shadowName(table), table, present(changes.values()));
        // Later spills merge and evicted rows are read back by key: from now on the shadow needs its key.
        await this.client.query(
          `ALTER TABLE ${shadowName(table)} ADD PRIMARY KEY (${table.primaryKey.join(", ")})`,
        );
        this.spilled.add(table);
      } else {
        await this.merge(table, changes);
      }
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

  private async merge(table: TableDefinition, changes: Map<string, Row | null>): Promise<void> {
    const staging = `${table.name}__staging`;
    await this.client.query(
      `CREATE TEMPORARY TABLE IF NOT EXISTS ${staging} (LIKE ${table.name}, deleted boolean NOT NULL) ON COMMIT DROP`,
    );
    await this.client.query(`TRUNCATE ${staging}`);
    const keyOnly = (rowKey: string): Row => {
      const values = JSON.parse(rowKey) as Row[string][];
      return Object.fromEntries(table.primaryKey.map((column, index) => [column, values[index] ?? null]));
    };
    await copyRows(
      this.client,
      staging,
      table,
      (function* () {
        for (const [rowKey, row] of changes) yield row ?? { ...keyOnly(rowKey), deleted: true };
      })(),
      [{ name: "deleted", value: (row) => (row.deleted === true ? "t" : "f") }],
    );
    const keyMatch = table.primaryKey.map((column) => `shadow.${column} = staging.${column}`).join(" AND ");
    const columns = Object.keys(table.columns).join(", ");
    await this.client.query(
      `DELETE FROM ${shadowName(table)} shadow USING ${staging} staging WHERE ${keyMatch}`,
    );
    await this.client.query(
      `INSERT INTO ${shadowName(table)} (${columns}) SELECT ${columns} FROM ${staging} WHERE NOT deleted`,
    );
  }

  /**
   * Keys and indexes are built on the shadows while readers still use the live tables; then each live
   * table is dropped and its shadow renamed into place, indexes included.
   */
  async indexAndSwap(): Promise<void> {
    const renames: { from: string; to: string }[] = [];
    for (const table of this.tables) {
      if (!this.spilled.has(table)) {
        await this.client.query(
          `ALTER TABLE ${shadowName(table)} ADD PRIMARY KEY (${table.primaryKey.join(", ")})`,
        );
      }
      renames.push({ from: `${shadowName(table)}_pkey`, to: `${table.name}_pkey` });
      for (const statement of table.indexes ?? []) {
        const index = shadowIndexStatement(table, statement);
        await this.client.query(index.statement);
        renames.push({ from: index.shadowIndex, to: index.index });
      }
    }
    for (const table of this.tables) {
      await this.client.query(`DROP TABLE ${table.name}`);
      await this.client.query(`ALTER TABLE ${shadowName(table)} RENAME TO ${table.name}`);
    }
    for (const rename of renames)
      await this.client.query(`ALTER INDEX ${rename.from} RENAME TO ${rename.to}`);
  }
}

function* present(rows: Iterable<Row | null>): Generator<Row> {
  for (const row of rows) if (row) yield row;
}

function shadowName(table: TableDefinition): string {
  return `${table.name}${shadowSuffix}`;
}

function shadowDefinition(table: TableDefinition): TableDefinition {
  return { ...table, name: shadowName(table), indexes: [] };
}

const indexStatementPattern = /^CREATE (UNIQUE )?INDEX IF NOT EXISTS (\w+) ON (\w+) (.+)$/s;

/** A projection's index statement, aimed at its shadow table under a temporary index name. */
function shadowIndexStatement(
  table: TableDefinition,
  statement: string,
): { statement: string; index: string; shadowIndex: string } {
  const match = indexStatementPattern.exec(statement.trim());
  if (!match || match[3] !== table.name) {
    throw new Error(
      `${table.name}: index statement not of the form CREATE [UNIQUE] INDEX IF NOT EXISTS name ON table …`,
    );
  }
  const [, unique, index, , rest] = match;
  const shadowIndex = `${index}${shadowSuffix}`;
  return {
    statement: `CREATE ${unique ?? ""}INDEX ${shadowIndex} ON ${shadowName(table)} ${rest}`,
    index: index!,
    shadowIndex,
  };
}
