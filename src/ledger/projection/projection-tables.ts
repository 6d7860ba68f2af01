import type { ClientBase } from "pg";
import { preparedStatement } from "../../database/prepared-statement";
import { Money } from "../../kernel/money";
import type { ColumnType, ColumnValue, Row, TableDefinition } from "./projection";

/** SQL for projection tables, generated from their definitions so the fold and the SQL cannot drift. */

type Queryable = Pick<ClientBase, "query">;

const sqlTypes: Record<ColumnType, string> = {
  text: "text",
  numeric: "numeric",
  integer: "integer",
  bigint: "bigint",
  boolean: "boolean",
  timestamptz: "timestamptz",
  date: "date",
  // json, not jsonb: projection documents are written often and only read whole.
  json: "json",
};

function columnNames(table: TableDefinition): string[] {
  return Object.keys(table.columns);
}

function columnType(table: TableDefinition, column: string): ColumnType {
  const type = table.columns[column];
  if (!type) throw new Error(`${table.name} has no column ${column}`);
  return type;
}

function columnDefinitions(table: TableDefinition): string {
  return columnNames(table)
    .map((column) => {
      const nullable = table.primaryKey.includes(column) ? " NOT NULL" : "";
      return `${column} ${sqlTypes[columnType(table, column)]}${nullable}`;
    })
    .join(", ");
}

export function createTableStatements(table: TableDefinition): string[] {
  return [
    `CREATE TABLE IF NOT EXISTS ${table.name} (${columnDefinitions(table)}, PRIMARY KEY (${table.primaryKey.join(", ")}))`,
    ...(table.indexes ?? []),
  ];
}

/**
 * The `ALTER TABLE … ADD COLUMN` statements that give the standing projection tables the columns their
 * definitions have gained since they were created (CREATE TABLE IF NOT EXISTS leaves a standing table as it
 * is), so a definition stays the one place a table is declared: the projection's version moves with such a
 * change, and its refold fills the column. Only a missing column is altered (ALTER TABLE locks the table even
 * when it changes nothing); a table not created yet is left to its CREATE.
 */
export async function missingColumnStatements(
  client: Queryable,
  tables: readonly TableDefinition[],
): Promise<string[]> {
  const existing = await client.query<{ table_name: string; column_name: string }>(
    `SELECT table_name, column_name FROM information_schema.columns
     WHERE table_schema = current_schema() AND table_name = ANY($1::text[])`,
    [tables.map((table) => table.name)],
  );
  const has = new Set(existing.rows.map((row) => `${row.table_name}.${row.column_name}`));
  const standing = new Set(existing.rows.map((row) => row.table_name));
  return tables
    .filter((table) => standing.has(table.name))
    .flatMap((table) =>
      columnNames(table)
        .filter((column) => !has.has(`${table.name}.${column}`))
        .map((column) => {
          if (table.primaryKey.includes(column)) {
            throw new Error(
              `${table.name} cannot gain the key column ${column}: a new key needs a new table`,
            );
          }
          return `ALTER TABLE ${table.name} ADD COLUMN IF NOT EXISTS ${column} ${sqlTypes[columnType(table, column)]}`;
        }),
    );
}

/** Adds the missing columns (`missingColumnStatements`) in the caller's transaction. */
export async function addMissingColumns(
  client: Queryable,
  tables: readonly TableDefinition[],
): Promise<void> {
  for (const statement of await missingColumnStatements(client, tables)) await client.query(statement);
}

/** A session's private table with the columns of `table`, keyed later if at all. */
export function createUnkeyedTemporaryTableStatement(table: TableDefinition, name: string): string {
  return `CREATE TEMPORARY TABLE ${name} (${columnDefinitions(table)})`;
}

/** Selects a column in the form the fold uses (timestamps as ISO-8601 UTC, dates as YYYY-MM-DD). */
function selectExpression(table: TableDefinition, column: string, source: string, alias: string): string {
  switch (columnType(table, column)) {
    case "timestamptz":
      return `to_char(${source} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS ${alias}`;
    case "date":
    case "bigint":
      return `${source}::text AS ${alias}`;
    default:
      return `${source} AS ${alias}`;
  }
}

function selectList(table: TableDefinition): string {
  return columnNames(table)
    .map((column) => selectExpression(table, column, column, column))
    .join(", ");
}

/**
 * The same select list over a row source of a query joining several (`live.balance_won AS live__balance_won`);
 * `unprefixed` turns such a result row back into the table's row.
 */
export function prefixedSelectList(table: TableDefinition, source: string): string {
  return columnNames(table)
    .map((column) => selectExpression(table, column, `${source}.${column}`, `${source}__${column}`))
    .join(", ");
}

export function unprefixed(table: TableDefinition, source: string, row: Record<string, ColumnValue>): Row {
  return Object.fromEntries(
    columnNames(table).map((column) => [column, row[`${source}__${column}`] ?? null]),
  );
}

/** A condition true where two row sources differ in any column, as the fold compares values. */
export function columnsDiffer(table: TableDefinition, left: string, right: string): string {
  return columnNames(table)
    .map((column) => {
      // json has no equality; jsonb's ignores key order and whitespace, as canonicalValue does.
      const cast = columnType(table, column) === "json" ? "::jsonb" : "";
      return `${left}.${column}${cast} IS DISTINCT FROM ${right}.${column}${cast}`;
    })
    .join(" OR ");
}

/**
 * Rows travel to PostgreSQL as one JSON document read with json_to_recordset: faster to build and to
 * parse than one array parameter per column, and it carries every column type as is.
 */
function recordsetOf(table: TableDefinition, columns: readonly string[]): string {
  const definitions = columns.map((column) => `${column} ${sqlTypes[columnType(table, column)]}`);
  return `json_to_recordset($1::json) AS input(${definitions.join(", ")})`;
}

function jsonOf(columns: readonly string[], rows: readonly Partial<Row>[]): string {
  return JSON.stringify(
    rows.map((row) => Object.fromEntries(columns.map((column) => [column, row[column] ?? null]))),
  );
}

export async function loadRows(
  client: Queryable,
  table: TableDefinition,
  keys: readonly Partial<Row>[],
): Promise<Row[]> {
  if (keys.length === 0) return [];
  const key = table.primaryKey;
  const result = await client.query<Row>(
    preparedStatement(
      `SELECT ${selectList(table)} FROM ${table.name}
       WHERE (${key.join(", ")}) IN (SELECT ${key.join(", ")} FROM ${recordsetOf(table, key)})`,
      [jsonOf(key, keys)],
    ),
  );
  return result.rows;
}

export async function upsertRows(
  client: Queryable,
  table: TableDefinition,
  rows: readonly Row[],
): Promise<void> {
  if (rows.length === 0) return;
  const columns = columnNames(table);
  const updatable = columns.filter((column) => !table.primaryKey.includes(column));
  const onConflict =
    updatable.length === 0
      ? "DO NOTHING"
      : `DO UPDATE SET ${updatable.map((column) => `${column} = EXCLUDED.${column}`).join(", ")}`;
  await client.query(
    preparedStatement(
      `INSERT INTO ${table.name} (${columns.join(", ")}) SELECT ${columns.join(", ")} FROM ${recordsetOf(table, columns)}
       ON CONFLICT (${table.primaryKey.join(", ")}) ${onConflict}`,
      [jsonOf(columns, rows)],
    ),
  );
}

export async function deleteRows(
  client: Queryable,
  table: TableDefinition,
  keys: readonly Partial<Row>[],
): Promise<void> {
  if (keys.length === 0) return;
  const key = table.primaryKey;
  await client.query(
    preparedStatement(
      `DELETE FROM ${table.name} WHERE (${key.join(", ")}) IN (SELECT ${key.join(", ")} FROM ${recordsetOf(table, key)})`,
      [jsonOf(key, keys)],
    ),
  );
}

/** Canonical text of a value for comparing the fold with stored rows: 10.50 = 10.5, key order ignored. */
export function canonicalValue(type: ColumnType, value: ColumnValue | undefined): string {
  if (value === undefined || value === null) return "null";
  switch (type) {
    case "numeric":
      return new Money(String(value)).toFixed();
    case "timestamptz":
      return new Date(String(value)).toISOString();
    case "json":
      return canonicalJson(value);
    case "text":
    case "integer":
    case "bigint":
    case "boolean":
    case "date":
      return String(value);
    default: {
      const unreachable: never = type;
      throw new Error(`unknown column type ${unreachable}`);
    }
  }
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, entry]) => entry !== undefined)
      .sort(([left], [right]) => (left < right ? -1 : left > right ? 1 : 0));
    return `{${entries.map(([key, entry]) => `${JSON.stringify(key)}:${canonicalJson(entry)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}
