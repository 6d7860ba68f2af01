import type { ClientBase } from "pg";
import type { LogPosition } from "../store/log-position";
import { visibleTransactionOrderBelow } from "../store/log-visibility";

/**
 * The leaves a checkpoint seals: one per event, in log order, each the event's chain hash. An event
 * written before the chain existed has none; its leaf is the same hash computed with the genesis hash as
 * predecessor, so those events are sealed by their content too.
 */

type Queryable = Pick<ClientBase, "query">;

export interface Leaf {
  position: LogPosition;
  eventId: string;
  leaf: Buffer;
}

// Aliases differ from the column names: ORDER BY would otherwise sort the text, "1000" before "999".
const leafColumns = `transaction_order::text AS transaction_order_text, position::text AS position_text, event_id::text AS event_id,
  coalesce(chain_hash, ledger_event_hash(decode(repeat('00', 32), 'hex'), stream_id, stream_version, event_id, type,
    schema_version, data, metadata)) AS leaf`;

/**
 * Leaves after `after`, only of transactions every reader can already see in full (the event store's
 * rule, see postgres-event-store.ts): a checkpoint never seals a range a late commit could still land in.
 */
export async function readSealableLeaves(
  client: Queryable,
  after: LogPosition,
  limit: number,
): Promise<Leaf[]> {
  const result = await client.query<LeafRow>({
    name: "ledger-sealable-leaves",
    text: `SELECT ${leafColumns} FROM ledger_events
           WHERE (transaction_order, position) > ($1, $2)
             AND transaction_order < ${visibleTransactionOrderBelow("(SELECT transaction_order_offset FROM ledger_settings)")}
           ORDER BY transaction_order, position LIMIT $3`,
    values: [String(after.commit), String(after.prepare), limit],
  });
  return result.rows.map(toLeaf);
}

/** Leaves in (after, through], at most `limit`: what a stored checkpoint's range holds now. */
export async function readLeavesBetween(
  client: Queryable,
  after: LogPosition,
  through: LogPosition,
  limit: number,
): Promise<Leaf[]> {
  const result = await client.query<LeafRow>({
    name: "ledger-leaves-between",
    text: `SELECT ${leafColumns} FROM ledger_events
           WHERE (transaction_order, position) > ($1, $2) AND (transaction_order, position) <= ($3, $4)
           ORDER BY transaction_order, position LIMIT $5`,
    values: [
      String(after.commit),
      String(after.prepare),
      String(through.commit),
      String(through.prepare),
      limit,
    ],
  });
  return result.rows.map(toLeaf);
}

interface LeafRow {
  transaction_order_text: string;
  position_text: string;
  event_id: string;
  leaf: Buffer;
}

function toLeaf(row: LeafRow): Leaf {
  return {
    position: { commit: BigInt(row.transaction_order_text), prepare: BigInt(row.position_text) },
    eventId: row.event_id,
    leaf: row.leaf,
  };
}
