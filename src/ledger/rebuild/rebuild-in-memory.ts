import type pg from "pg";
import type { ProjectionDefinition } from "../projection/projection";
import type { EventStore } from "../store/event-store";
import type { LogPosition } from "../store/log-position";
import { foldIntoShadows, pagesOf } from "./fold-into-shadows";
import { ShadowTables } from "./shadow-tables";

/**
 * Rebuilds projections by their TypeScript folds, inside the caller's transaction, for any event store:
 * the log is folded in memory, page by page, into the shadow tables (fold-into-shadows.ts: memory bounded
 * by `rowsInMemoryMax` rows plus two pages), which are indexed once at the end and replace the live tables.
 */

export interface InMemoryRebuildOptions {
  pageSizeMax: number;
  rowsInMemoryMax: number;
  onProgress?: (appliedEvents: number) => void;
  /** Runs once the shadows are filled and indexed, before the live tables are locked and swapped. */
  beforeSwap?: () => Promise<void>;
}

export async function rebuildInMemory(
  client: pg.ClientBase,
  store: EventStore,
  projections: readonly ProjectionDefinition[],
  options: InMemoryRebuildOptions,
): Promise<{ eventCount: number; last: LogPosition }> {
  const shadows = new ShadowTables(
    client,
    projections.flatMap((projection) => projection.tables),
  );
  await shadows.create();
  const pages = store.readWholeLog?.(options.pageSizeMax) ?? pagesOf(store, options.pageSizeMax);
  const folded = await foldIntoShadows(shadows, pages, projections, options);
  await shadows.indexAndSwap(options.beforeSwap);
  return folded;
}
