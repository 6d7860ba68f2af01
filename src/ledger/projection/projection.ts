import type { LedgerEventType } from "../events";
import type { RecordedEvent } from "../store/event-store";

/**
 * A projection is a pure fold of ledger events into rows of its own tables. It never decides anything and
 * never reads outside its rows. It has two definitions of one fold: `evolve`, event by event, and its SQL
 * twin `sqlFold`, set-wise. The runner applies it live, batch by batch, rows and checkpoint in one
 * transaction (on PostgreSQL by `sqlFold`); `ledger rebuild` over the whole log (on PostgreSQL by `sqlFold`);
 * `ledger verify` in memory, by `evolve`, and compares.
 *
 * Rule that makes batching possible: the keys of the rows an event touches come from the event itself,
 * never from the contents of another row.
 */

export type ColumnType =
  | "text"
  | "numeric"
  | "integer"
  | "bigint"
  | "boolean"
  | "timestamptz"
  | "date"
  | "json";

/** Row values as the fold sees them: numeric/bigint/dates as strings, json as parsed JSON. */
export type ColumnValue = string | number | boolean | null | Record<string, unknown> | unknown[];
export type Row = Record<string, ColumnValue>;

export interface TableDefinition<R extends Row = Row> {
  readonly name: string;
  readonly columns: { readonly [K in keyof R]: ColumnType };
  readonly primaryKey: readonly (keyof R & string)[];
  /** Extra DDL (indexes) run after the table is created. */
  readonly indexes?: readonly string[];
  /**
   * The fold only puts and deletes this table's rows, never gets one: a rebuild may write them out and
   * drop them from memory without ever reading them back. A get is then a programmer error.
   */
  readonly writeOnly?: boolean;
}

export function defineTable<R extends Row>(definition: TableDefinition<R>): TableDefinition<R> {
  return definition;
}

export type RowKey<R extends Row, T extends TableDefinition<R>> = Pick<R, T["primaryKey"][number]>;

/** The rows a fold reads and writes. */
export interface ProjectionRows {
  get<R extends Row>(table: TableDefinition<R>, key: Partial<R>): R | undefined;
  put<R extends Row>(table: TableDefinition<R>, row: R): void;
  delete<R extends Row>(table: TableDefinition<R>, key: Partial<R>): void;
}

export interface ProjectionDefinition {
  readonly name: string;
  /** Bump when the fold or tables change: the runner then rebuilds this projection from the log. */
  readonly version: number;
  readonly handles: ReadonlySet<LedgerEventType>;
  readonly tables: readonly TableDefinition[];
  evolve(rows: ProjectionRows, event: RecordedEvent): void;
  /** The same fold in SQL, which a rebuild of the PostgreSQL store runs instead of `evolve`. */
  readonly sqlFold?: SqlFold;
}

/** Names the table a fold's statement writes: a rebuild's shadow, or the projection's own table. */
export type FoldTarget = (table: TableDefinition) => string;

/**
 * A projection's fold as SQL statements over parsed events (src/ledger/rebuild/parsed-events.ts), run in
 * order on each part of the log, a later part's statements seeing what earlier ones wrote: on each chunk of a
 * rebuild (src/ledger/rebuild/rebuild-in-sql.ts), into shadow tables, and on each batch the runner applies on
 * the PostgreSQL store (projection-runner.ts), into the projection's own tables. `ledger verify` compares the
 * rows with `evolve`'s, and the tests fold both ways.
 */
export interface SqlFold {
  /** Tables the statements update, upsert or delete by key: their shadows are keyed from the start. */
  readonly keyed?: readonly TableDefinition[];
  statements(into: FoldTarget): readonly string[];
  /**
   * A rebuild's merge of what several chunks folded into rows per key, run once after the last chunk, before
   * the shadows get their keys; skipped when one chunk held the whole log, whose rows have nothing to merge.
   */
  finish?(into: FoldTarget): readonly string[];
  /**
   * For a fold with `finish`: what a live batch runs instead of `statements`, leaving the projection's own
   * tables whole after each batch (their keys hold throughout).
   */
  readonly batchStatements?: readonly string[];
}

/** The statements that fold one live batch into the projection's own tables. */
export function batchStatementsOf(fold: SqlFold): readonly string[] {
  if (fold.finish) {
    if (!fold.batchStatements) throw new Error("an SQL fold with a finish needs statements for live batches");
    return fold.batchStatements;
  }
  return fold.statements((table) => table.name);
}

export function rowKeyOf(table: TableDefinition, row: Partial<Row>): string {
  return JSON.stringify(
    table.primaryKey.map((column) => {
      const value = row[column];
      if (value === undefined || value === null)
        throw new Error(`${table.name}: key column ${column} is missing`);
      return value;
    }),
  );
}

/** In-memory rows, keyed per table; records which rows changed since `takeChanges`. */
export class MemoryRows implements ProjectionRows {
  private readonly tables = new Map<string, Map<string, Row>>();
  private changed = new Map<TableDefinition, Map<string, Row | null>>();

  get<R extends Row>(table: TableDefinition<R>, key: Partial<R>): R | undefined {
    return this.tableRows(table).get(rowKeyOf(table as TableDefinition, key)) as R | undefined;
  }

  put<R extends Row>(table: TableDefinition<R>, row: R): void {
    const key = rowKeyOf(table as TableDefinition, row);
    this.tableRows(table).set(key, row);
    this.changesOf(table as TableDefinition).set(key, row);
  }

  delete<R extends Row>(table: TableDefinition<R>, key: Partial<R>): void {
    const rowKey = rowKeyOf(table as TableDefinition, key);
    this.tableRows(table).delete(rowKey);
    this.changesOf(table as TableDefinition).set(rowKey, null);
  }

  /** Seeds rows loaded from the database without counting them as changes. */
  load(table: TableDefinition, rows: readonly Row[]): void {
    const tableRows = this.tableRows(table);
    for (const row of rows) tableRows.set(rowKeyOf(table, row), row);
  }

  rowsOf(table: TableDefinition): Row[] {
    return [...this.tableRows(table).values()];
  }

  /** Net change per row since the last call: the row, or null when it was deleted. */
  takeChanges(): Map<TableDefinition, Map<string, Row | null>> {
    const changes = this.changed;
    this.changed = new Map();
    return changes;
  }

  private tableRows(table: TableDefinition<Row> | TableDefinition): Map<string, Row> {
    let rows = this.tables.get(table.name);
    if (!rows) {
      rows = new Map();
      this.tables.set(table.name, rows);
    }
    return rows;
  }

  private changesOf(table: TableDefinition): Map<string, Row | null> {
    let changes = this.changed.get(table);
    if (!changes) {
      changes = new Map();
      this.changed.set(table, changes);
    }
    return changes;
  }
}

/** Runs a fold only to learn which rows it reads, so a batch can load them in one query per table. */
export class KeyCollector implements ProjectionRows {
  readonly reads = new Map<TableDefinition, Map<string, Partial<Row>>>();

  get<R extends Row>(table: TableDefinition<R>, key: Partial<R>): R | undefined {
    const definition = table as TableDefinition;
    let keys = this.reads.get(definition);
    if (!keys) {
      keys = new Map();
      this.reads.set(definition, keys);
    }
    keys.set(rowKeyOf(definition, key), key);
    return undefined;
  }

  put(): void {}
  delete(): void {}
}
