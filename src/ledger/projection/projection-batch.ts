import type { ClientBase } from "pg";
import type { RecordedEvent } from "../store/event-store";
import { KeyCollector, MemoryRows, type ProjectionDefinition, type Row } from "./projection";
import { deleteRows, loadRows, upsertRows } from "./projection-tables";

/**
 * Applies a batch of events to one projection inside the caller's transaction: learn which rows the fold
 * reads, load them in one query per table, fold in memory, write the net change per row.
 */
export async function applyProjectionBatch(
  client: Pick<ClientBase, "query">,
  projection: ProjectionDefinition,
  events: readonly RecordedEvent[],
): Promise<void> {
  if (events.length === 0) return;
  const collector = new KeyCollector();
  for (const event of events) projection.evolve(collector, event);

  const rows = new MemoryRows();
  for (const [table, keys] of collector.reads) {
    rows.load(table, await loadRows(client, table, [...keys.values()]));
  }
  for (const event of events) projection.evolve(rows, event);

  for (const [table, changes] of rows.takeChanges()) {
    const deleted: Partial<Row>[] = [];
    const written: Row[] = [];
    for (const [key, row] of changes) {
      if (row) written.push(row);
      else deleted.push(keyFromJson(table.primaryKey, key));
    }
    await deleteRows(client, table, deleted);
    await upsertRows(client, table, written);
  }
}

function keyFromJson(columns: readonly string[], key: string): Partial<Row> {
  const values = JSON.parse(key) as Row[string][];
  return Object.fromEntries(columns.map((column, index) => [column, values[index] ?? null]));
}
