import type pg from "pg";
import type { ColumnValue, Row, TableDefinition } from "../projection/projection";
import { rowKeyOf } from "../projection/projection";
import {
  canonicalValue,
  columnsDiffer,
  prefixedSelectList,
  unprefixed,
} from "../projection/projection-tables";

/** What `ledger verify` finds between a projection's rows and a fold of the log. */
export interface ProjectionDifference {
  projection: string;
  table: string;
  key: string;
  /**
   * `missing`: the log has the row, the projection not; `unexpected`: the reverse; `column`: a column's
   * value differs; `more`: `count` further rows of the table differ, not listed.
   */
  kind: "missing" | "unexpected" | "column" | "more";
  column?: string;
  live?: string;
  expected?: string;
  count?: number;
}

/**
 * Compares a table's live rows with the fold's, both in tables of this session: the database finds the rows
 * that differ (a join on the key, so memory holds none of the others), and the first `listedMax` of them, in
 * key order, are described column by column.
 */
export async function tableDifferences(
  client: Pick<pg.ClientBase, "query">,
  projection: string,
  table: TableDefinition,
  tables: { live: string; expected: string },
  listedMax: number,
): Promise<ProjectionDifference[]> {
  const keyOf = (source: string) => table.primaryKey.map((column) => `${source}.${column}`);
  const [liveKey, expectedKey] = [keyOf("live"), keyOf("expected")];
  const result = await client.query<Record<string, ColumnValue> & { differing: string }>(
    `SELECT ${prefixedSelectList(table, "live")}, ${prefixedSelectList(table, "expected")},
            count(*) OVER () AS differing
     FROM ${tables.live} live FULL JOIN ${tables.expected} expected
       ON ${liveKey.map((column, index) => `${column} = ${expectedKey[index]}`).join(" AND ")}
     WHERE ${liveKey[0]} IS NULL OR ${expectedKey[0]} IS NULL OR ${columnsDiffer(table, "live", "expected")}
     ORDER BY ${liveKey.map((column, index) => `coalesce(${column}, ${expectedKey[index]})`).join(", ")}
     LIMIT ${listedMax}`,
  );
  // A side of the join without the row has nulls for a key (key columns are never null).
  const present = (row: Row) => (row[table.primaryKey[0]!] !== null ? row : undefined);
  const differences: ProjectionDifference[] = [];
  for (const found of result.rows) {
    differences.push(
      ...rowDifferences(
        projection,
        table,
        present(unprefixed(table, "live", found)),
        present(unprefixed(table, "expected", found)),
      ),
    );
  }
  const differing = Number(result.rows[0]?.differing ?? 0);
  if (differing > result.rows.length) {
    differences.push({
      projection,
      table: table.name,
      key: "",
      kind: "more",
      count: differing - result.rows.length,
    });
  }
  return differences;
}

function rowDifferences(
  projection: string,
  table: TableDefinition,
  live: Row | undefined,
  expected: Row | undefined,
): ProjectionDifference[] {
  if (!live) return [{ projection, table: table.name, key: rowKeyOf(table, expected!), kind: "missing" }];
  const key = rowKeyOf(table, live);
  if (!expected) return [{ projection, table: table.name, key, kind: "unexpected" }];
  const differences: ProjectionDifference[] = [];
  for (const [column, type] of Object.entries(table.columns)) {
    const liveValue = canonicalValue(type, live[column]);
    const expectedValue = canonicalValue(type, expected[column]);
    if (liveValue !== expectedValue) {
      differences.push({
        projection,
        table: table.name,
        key,
        kind: "column",
        column,
        live: liveValue,
        expected: expectedValue,
      });
    }
  }
  return differences;
}

export function describeDifference(difference: ProjectionDifference): string {
  const where = `${difference.projection} ${difference.table} ${difference.key}`;
  switch (difference.kind) {
    case "missing":
      return `${where}: row missing from the projection`;
    case "unexpected":
      return `${where}: row in the projection that the log does not produce`;
    case "column":
      return `${where}: ${difference.column} is ${difference.live}, the log gives ${difference.expected}`;
    case "more":
      return `${difference.projection} ${difference.table}: ${difference.count} more rows differ, not listed`;
    default: {
      const unreachable: never = difference.kind;
      return unreachable;
    }
  }
}

/** How many differences a verify found, counting the rows it did not list. */
export function differenceCount(differences: readonly ProjectionDifference[]): number {
  return differences.reduce((total, difference) => total + (difference.count ?? 1), 0);
}
