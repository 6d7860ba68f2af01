import type { ClientBase } from "pg";
import { assert } from "../../kernel/assert";
import type { LedgerEventType } from "../events";
import { parseBatch } from "../rebuild/parsed-events";
import type { LogPosition } from "../store/log-position";
import { batchStatementsOf, type ProjectionDefinition } from "./projection";

/**
 * Applies a batch of events to projections by their SQL folds, inside the caller's transaction: the batch's
 * events of the kinds they handle are parsed once, in the database (src/ledger/rebuild/parsed-events.ts),
 * and each projection's statements fold them into its own tables — no event's data is read and no row
 * loaded in this process. The same statements fold a rebuild's chunks.
 *
 * `events` is the batch as read, every event after `after` up to its last. The parse selects the same
 * events by their log positions, and must find exactly as many of the handled kinds: otherwise the
 * projections would apply events the checkpoints do not cover, or miss some, and the batch fails instead.
 */
export async function applySqlFoldBatch(
  client: Pick<ClientBase, "query">,
  projections: readonly ProjectionDefinition[],
  batch: { after: LogPosition; events: readonly { type: LedgerEventType; position: LogPosition }[] },
  alreadyFilled: boolean,
): Promise<void> {
  const handled = new Set(projections.flatMap((projection) => [...projection.handles]));
  const folded = batch.events.filter((event) => handled.has(event.type));
  if (folded.length === 0) return;
  const types = [...new Set(folded.map((event) => event.type))];
  const last = batch.events[batch.events.length - 1]!.position;
  const parsed = await parseBatch(client, { after: batch.after, upTo: last }, types, alreadyFilled);
  assert(
    parsed === folded.length,
    `a batch parsed ${parsed} events in the database but read ${folded.length}`,
  );
  for (const projection of projections) {
    if (!batch.events.some((event) => projection.handles.has(event.type))) continue;
    const fold = projection.sqlFold;
    assert(fold, `projection ${projection.name} has no SQL fold`);
    const statements = batchStatementsOf(fold);
    for (const [index, text] of statements.entries()) {
      // Named: planned once per session.
      await client.query({ name: `fold-batch-${projection.name}-${index}`, text });
    }
  }
}
