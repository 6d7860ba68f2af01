import type pg from "pg";
import { inOneTransaction } from "../../database/in-one-transaction";
import type { Row, TableDefinition } from "../projection/projection";
import { copyRows } from "../projection/projection-copy";
import {
  createTableStatements,
  createUnkeyedTemporaryTableStatement,
  loadRows,
} from "../projection/projection-tables";

/**
 * Tables a fold of the whole log writes: each projection table gets a "shadow". A rebuild's shadows stand
 * beside the live tables, filled while readers still use them, then indexed and renamed into their place in
 * the rebuild's transaction; readers see the old tables until the caller commits (the swap's locks make them
 * wait only for the renames and the commit). A verify's shadows are temporary: the fold it compares with the
 * live rows, dropped afterwards. A verify folds outside any transaction and commits each write on its own:
 * the store shows readers only transactions older than the oldest one running on the whole server, so a
 * transaction that wrote throughout the fold would hold back every projection and subscriber until it ended.
 */

export interface ShadowPlacement {
  readonly suffix: string;
  readonly temporary: boolean;
  /** Each write in a transaction of its own (the caller folds outside one); else in the caller's. */
  readonly commitsEachWrite: boolean;
}

const rebuildShadows: ShadowPlacement = { suffix: "__rebuild", temporary: false, commitsEachWrite: false };
export const verifyShadows: ShadowPlacement = {
  suffix: "__expected",
  temporary: true,
  commitsEachWrite: true,
};

/** A rebuild's shadow of a table: the name the projections' SQL folds write. */
export function shadowName(table: TableDefinition): string {
  return `${table.name}${rebuildShadows.suffix}`;
}

export class ShadowTables {
  /** Shadows with their primary key already: rows are merged into them, and read back by key. */
  private readonly keyed = new Set<TableDefinition>();

  constructor(
    private readonly client: pg.ClientBase,
    private readonly tables: readonly TableDefinition[],
    private readonly placement: ShadowPlacement = rebuildShadows,
  ) {}

  nameOf(table: TableDefinition): string {
    // Qualified: a temporary shadow's name never resolves to, or drops, a table of the same name elsewhere.
    return `${this.placement.temporary ? "pg_temp." : ""}${table.name}${this.placement.suffix}`;
  }

  /** Creates every shadow; those in `keyedFromStart` get their key now, the others when first needed. */
  async create(keyedFromStart: ReadonlySet<TableDefinition> = new Set()): Promise<void> {
    for (const table of this.tables) {
      await this.client.query(`DROP TABLE IF EXISTS ${this.nameOf(table)}`);
      if (this.placement.temporary) {
        await this.client.query(createUnkeyedTemporaryTableStatement(table, this.nameOf(table)));
      } else {
        // The live table first, so that a ledger rebuilt before any runner started has one to replace.
        for (const statement of createTableStatements(table)) await this.client.query(statement);
        // No key, no index while the rows go in: built once at the end, by sorting, not row by row.
        await this.client.query(`CREATE TABLE ${this.nameOf(table)} (LIKE ${table.name} INCLUDING DEFAULTS)`);
      }
      if (keyedFromStart.has(table)) await this.addKey(table);
    }
  }

  /** Rows of a shadow by key: what a fold that spilled them reads back. */
  readRows(table: TableDefinition, keys: readonly Partial<Row>[]): Promise<Row[]> {
    return loadRows(this.client, { ...table, name: this.nameOf(table), indexes: [] }, keys);
  }

  /**
   * Writes rows into a shadow: copied while it has no key (the first write), merged by key after that,
   * `null` deleting the row under that key.
   */
  async write(table: TableDefinition, changes: Map<string, Row | null>): Promise<void> {
    if (this.placement.commitsEachWrite)
      await inOneTransaction(this.client, () => this.writeRows(table, changes));
    else await this.writeRows(table, changes);
  }

  /** Drops every shadow (temporary shadows outlive a transaction: the fold commits as it goes). */
  async drop(): Promise<void> {
    for (const table of this.tables) await this.client.query(`DROP TABLE IF EXISTS ${this.nameOf(table)}`);
  }

  private async writeRows(table: TableDefinition, changes: Map<string, Row | null>): Promise<void> {
    if (!this.keyed.has(table)) {
      await copyRows(this.client, this.nameOf(table), table, present(changes.values()));
      // Later writes merge and evicted rows are read back by key: from now on the shadow needs its key.
      await this.addKey(table);
      return;
    }
    await this.merge(table, changes);
  }

  private async addKey(table: TableDefinition): Promise<void> {
    await this.client.query(
      `ALTER TABLE ${this.nameOf(table)} ADD PRIMARY KEY (${table.primaryKey.join(", ")})`,
    );
    this.keyed.add(table);
  }

  private async merge(table: TableDefinition, changes: Map<string, Row | null>): Promise<void> {
    const staging = `${table.name}__staging`;
    await this.client.query(
      `CREATE TEMPORARY TABLE IF NOT EXISTS ${staging} (LIKE ${this.nameOf(table)}, deleted boolean NOT NULL) ON COMMIT DROP`,
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
      `DELETE FROM ${this.nameOf(table)} shadow USING ${staging} staging WHERE ${keyMatch}`,
    );
    await this.client.query(
      `INSERT INTO ${this.nameOf(table)} (${columns}) SELECT ${columns} FROM ${staging} WHERE NOT deleted`,
    );
  }

  /**
   * Keys and indexes are built on the shadows while readers still use the live tables; then `beforeSwap`
   * runs, and each live table is dropped and its shadow renamed into place, indexes included. The live
   * tables are locked first, in the projections' order, the order readers of one snapshot lock them in
   * (projection-snapshot.ts), and stay locked until the caller commits.
   */
  async indexAndSwap(beforeSwap?: () => Promise<void>): Promise<void> {
    if (this.placement.temporary) throw new Error("temporary shadows are not swapped into place");
    const renames: { from: string; to: string }[] = [];
    for (const table of this.tables) {
      if (!this.keyed.has(table)) await this.addKey(table);
      renames.push({ from: `${this.nameOf(table)}_pkey`, to: `${table.name}_pkey` });
      for (const statement of table.indexes ?? []) {
        const index = shadowIndexStatement(table, statement, this.nameOf(table));
        await this.client.query(index.statement);
        renames.push({ from: index.shadowIndex, to: index.index });
      }
    }
    await beforeSwap?.();
    const live = this.tables.map((table) => table.name);
    await this.client.query(`LOCK TABLE ${live.join(", ")} IN ACCESS EXCLUSIVE MODE`);
    for (const table of this.tables) {
      await this.client.query(`DROP TABLE ${table.name}`);
      await this.client.query(`ALTER TABLE ${this.nameOf(table)} RENAME TO ${table.name}`);
    }
    for (const rename of renames)
      await this.client.query(`ALTER INDEX ${rename.from} RENAME TO ${rename.to}`);
  }
}

function* present(rows: Iterable<Row | null>): Generator<Row> {
  for (const row of rows) if (row) yield row;
}

const indexStatementPattern = /^CREATE (UNIQUE )?INDEX IF NOT EXISTS (\w+) ON (\w+) (.+)$/s;

/** A projection's index statement, aimed at its shadow table under a temporary index name. */
function shadowIndexStatement(
  table: TableDefinition,
  statement: string,
  shadow: string,
): { statement: string; index: string; shadowIndex: string } {
  const match = indexStatementPattern.exec(statement.trim());
  if (!match || match[3] !== table.name) {
    throw new Error(
      `${table.name}: index statement not of the form CREATE [UNIQUE] INDEX IF NOT EXISTS name ON table …`,
    );
  }
  const [, unique, index, , rest] = match;
  const shadowIndex = `${index}${rebuildShadows.suffix}`;
  return {
    statement: `CREATE ${unique ?? ""}INDEX ${shadowIndex} ON ${shadow} ${rest}`,
    index: index!,
    shadowIndex,
  };
}
