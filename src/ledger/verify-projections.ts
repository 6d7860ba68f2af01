import type pg from "pg";
import { withHeldConnection } from "../database/held-connection";
import { limits } from "../kernel/limits";
import { verifyInlineFunds } from "./inline-funds";
import type { LedgerMaintenanceContext } from "./ledger-maintenance";
import type { TableDefinition } from "./projection/projection";
import { lockTablesBeforeSnapshot } from "./projection/projection-snapshot";
import { createUnkeyedTemporaryTableStatement } from "./projection/projection-tables";
import { foldIntoShadows, pagesOf } from "./rebuild/fold-into-shadows";
import { type ProjectionDifference, tableDifferences } from "./rebuild/projection-differences";
import { ShadowTables, verifyShadows } from "./rebuild/shadow-tables";
import { compareLogPositions, type LogPosition, logStart } from "./store/log-position";

/**
 * `ledger verify`'s second half: folds the log afresh by the projections' TypeScript folds, each projection
 * up to its own checkpoint, and compares the result with the live rows as they were at one instant.
 *
 * Memory is bounded whatever the ledger's size: the live rows are copied into temporary tables in one
 * snapshot (and that snapshot let go, so a long fold does not hold back vacuum), the fold spills into
 * temporary tables as a rebuild in memory does, and the database joins the two.
 */

export interface VerifyProjectionsOptions {
  /** Rows the fold holds in memory before writing them out. */
  rowsInMemoryMax?: number;
  pageSizeMax?: number;
  /** Differing rows described per table; the rest are counted. */
  rowsListedMax?: number;
}

const liveCopySuffix = "__live";

export async function verifyProjections(
  context: LedgerMaintenanceContext,
  options: VerifyProjectionsOptions = {},
): Promise<ProjectionDifference[]> {
  const tables = context.projections.flatMap((projection) => projection.tables);
  return withHeldConnection(context.pool, async (client, isLost) => {
    const expected = new ShadowTables(client, tables, verifyShadows);
    try {
      const standing = await existingTables(client, tables);
      await client.query("BEGIN ISOLATION LEVEL REPEATABLE READ");
      // A rebuild or refold swapping a table in as this snapshot is taken would show it empty otherwise.
      if (standing.length > 0) await lockTablesBeforeSnapshot(client, standing);
      const checkpoints = await readCheckpoints(client);
      const differences: ProjectionDifference[] = await verifyInlineFunds(client);
      for (const table of tables) await copyLiveRows(client, table);
      await client.query("COMMIT");

      // No transaction around the fold: one that wrote all along would hold back every reader of the log on
      // the server (projections, subscribers) until it ended. The shadows commit each write on their own.
      await expected.create();
      await foldIntoShadows(
        expected,
        pagesOf(context.store, options.pageSizeMax ?? limits.rebuildBatchSizeMax, highestOf(checkpoints)),
        context.projections,
        {
          rowsInMemoryMax: options.rowsInMemoryMax ?? limits.rebuildRowsInMemoryMax,
          folds: (projection, event) =>
            projection.handles.has(event.type) &&
            compareLogPositions(event.position, checkpoints.get(projection.name) ?? logStart) <= 0,
        },
      );
      for (const projection of context.projections) {
        for (const table of projection.tables) {
          differences.push(
            ...(await tableDifferences(
              client,
              projection.name,
              table,
              { live: liveCopyName(table), expected: expected.nameOf(table) },
              options.rowsListedMax ?? differencesListedPerTable,
            )),
          );
        }
      }
      return differences;
    } catch (error) {
      if (!isLost()) await client.query("ROLLBACK").catch(() => {});
      throw error;
    } finally {
      if (!isLost()) {
        await expected.drop().catch(() => {});
        for (const table of tables) {
          await client.query(`DROP TABLE IF EXISTS ${liveCopyName(table)}`).catch(() => {});
        }
      }
    }
  });
}

const differencesListedPerTable = 100;

function liveCopyName(table: TableDefinition): string {
  return `pg_temp.${table.name}${liveCopySuffix}`;
}

/** The live rows, in the caller's snapshot; a table no runner has created yet has none. */
async function copyLiveRows(client: pg.ClientBase, table: TableDefinition): Promise<void> {
  await client.query(`DROP TABLE IF EXISTS ${liveCopyName(table)}`);
  await client.query(createUnkeyedTemporaryTableStatement(table, liveCopyName(table)));
  const exists = await client.query<{ exists: boolean }>("SELECT to_regclass($1) IS NOT NULL AS exists", [
    table.name,
  ]);
  if (!exists.rows[0]!.exists) return;
  const columns = Object.keys(table.columns).join(", ");
  await client.query(`INSERT INTO ${liveCopyName(table)} (${columns}) SELECT ${columns} FROM ${table.name}`);
}

/**
 * The projection tables created so far (no runner may have started), in the projections' order: the order
 * a rebuild's swap locks them in (projection-snapshot.ts).
 */
async function existingTables(client: pg.ClientBase, tables: readonly TableDefinition[]): Promise<string[]> {
  const names = tables.map((table) => table.name);
  const result = await client.query<{ name: string }>(
    "SELECT name FROM unnest($1::text[]) AS name WHERE to_regclass(name) IS NOT NULL",
    [names],
  );
  const existing = new Set(result.rows.map((row) => row.name));
  return names.filter((name) => existing.has(name));
}

async function readCheckpoints(client: pg.ClientBase): Promise<Map<string, LogPosition>> {
  const result = await client.query<{
    projection: string;
    commit_position: string;
    prepare_position: string;
  }>("SELECT projection, commit_position, prepare_position FROM projection_checkpoints");
  return new Map(
    result.rows.map((row) => [
      row.projection,
      { commit: BigInt(row.commit_position), prepare: BigInt(row.prepare_position) },
    ]),
  );
}

function highestOf(checkpoints: ReadonlyMap<string, LogPosition>): LogPosition {
  let highest = logStart;
  for (const position of checkpoints.values()) {
    if (compareLogPositions(position, highest) > 0) highest = position;
  }
  return highest;
}
