import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { ClientBase } from "pg";
import { from as copyFrom } from "pg-copy-streams";
import type { ColumnType, ColumnValue, Row, TableDefinition } from "./projection";

/**
 * Writes projection rows with COPY (text format): several times faster than INSERT … SELECT from a JSON
 * recordset, which is what a rebuild of a large ledger is made of. Rows travel in chunks of
 * `rowsPerChunk` lines, so memory holds one chunk, not the whole table.
 */

const rowsPerChunk = 2_000;

export async function copyRows(
  client: ClientBase,
  tableName: string,
  table: TableDefinition,
  rows: Iterable<Row>,
  extraColumns: readonly { name: string; value: (row: Row) => string }[] = [],
): Promise<void> {
  const columns = Object.keys(table.columns);
  const names = [...columns, ...extraColumns.map((column) => column.name)];
  const stream = client.query(copyFrom(`COPY ${tableName} (${names.join(", ")}) FROM STDIN`));
  await pipeline(Readable.from(chunks(table, columns, rows, extraColumns)), stream);
}

function* chunks(
  table: TableDefinition,
  columns: readonly string[],
  rows: Iterable<Row>,
  extraColumns: readonly { name: string; value: (row: Row) => string }[],
): Generator<string> {
  let lines: string[] = [];
  for (const row of rows) {
    const fields = columns.map((column) => copyField(table.columns[column]!, row[column]));
    for (const extra of extraColumns) fields.push(extra.value(row));
    lines.push(fields.join("\t"));
    if (lines.length === rowsPerChunk) {
      yield `${lines.join("\n")}\n`;
      lines = [];
    }
  }
  if (lines.length > 0) yield `${lines.join("\n")}\n`;
}

/** One field of COPY's text format: \N for null, and backslash, tab, newline and return escaped. */
export function copyField(type: ColumnType, value: ColumnValue | undefined): string {
  if (value === undefined || value === null) return "\\N";
  switch (type) {
    case "json":
      return escapeText(JSON.stringify(value));
    case "boolean":
      return value ? "t" : "f";
    case "text":
    case "numeric":
    case "integer":
    case "bigint":
    case "timestamptz":
    case "date":
      return escapeText(String(value));
    default: {
      const unreachable: never = type;
      throw new Error(`unknown column type ${unreachable}`);
    }
  }
}

const specialCharacters = /[\\\t\n\r]/;

function escapeText(text: string): string {
  if (!specialCharacters.test(text)) return text;
  return text.replace(/\\/g, "\\\\").replace(/\t/g, "\\t").replace(/\n/g, "\\n").replace(/\r/g, "\\r");
}
