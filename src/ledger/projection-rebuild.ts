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
    if (rows.size > options.rowsInMemoryMax) await shadows.spill(rows);
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

/** The fold's rows since the last spill: a row, or null once deleted. */
class FoldRows implements ProjectionRows {
  readonly tables = new Map<TableDefinition, Map<string, Row | null>>();
  size = 0;

  get<R extends Row>(table: TableDefinition<R>, key: Partial<R>): R | undefined {
    const rows = this.tables.get(table as TableDefinition);
    return (rows?.get(rowKeyOf(table as TableDefinition, key)) ?? undefined) as R | undefined;
  }

  has(table: TableDefinition, rowKey: string): boolean {
    return this.tables.get(table)?.has(rowKey) ?? false;
  }

  put<R extends Row>(table: TableDefinition<R>, row: R): void {
    this.set(table as TableDefinition, rowKeyOf(table as TableDefinition, row), row);
  }

  delete<R extends Row>(table: TableDefinition<R>, key: Partial<R>): void {
    this.set(table as TableDefinition, rowKeyOf(table as TableDefinition, key), null);
  }

  set(table: TableDefinition, rowKey: string, row: Row | null): void {
    let rows = this.tables.get(table);
    if (!rows) {
      rows = new Map();
      this.tables.set(table, rows);
    }
    if (!rows.has(rowKey)) this.size++;
    rows.set(rowKey, row);
  }

  clear(): void {
    this.tables.clear();
    this.size = 0;
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
    if (this.spilled.size === 0) return;
    const collector = new KeyCollector();
    for (const event of events) {
      for (const projection of projections) {
        if (projection.handles.has(event.type)) projection.evolve(collector, event);
      }
    }
    for (const [table, keys] of collector.reads) {
      if (!this.spilled.has(table)) continue;
      const missing = [...keys].filter(([rowKey]) => !rows.has(table, rowKey)).map(([, key]) => key);
      for (const row of await loadRows(this.client, shadowDefinition(table), missing)) {
        rows.set(table, rowKeyOf(table, row), row);
      }
    }
  }

  /** Writes the fold's rows to the shadows and forgets them. */
  async spill(rows: FoldRows): Promise<void> {
    for (const [table, changes] of rows.tables) {
      if (!this.spilled.has(table)) {
        await copyRows(this.client, shadowName(table), table, present(changes.values()));
        // Later spills merge and later pages read by key: from now on the shadow needs its key.
        await this.client.query(
          `ALTER TABLE ${shadowName(table)} ADD PRIMARY KEY (${table.primaryKey.join(", ")})`,
        );
        this.spilled.add(table);
        continue;
      }
      await this.merge(table, changes);
    }
    rows.clear();
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
