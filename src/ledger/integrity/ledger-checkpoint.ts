import { createHash } from "node:crypto";
import type { ClientBase } from "pg";
import type { LogPosition } from "../store/log-position";
import { chainHashBytes } from "./event-hash";

/**
 * A checkpoint seals the global order: the RFC 6962 root over the leaves of the events since the previous
 * checkpoint, chained to that checkpoint's hash, signed with Ed25519 over its own hash.
 *
 * Checkpoint hash = SHA-256 of: "won-ledger-checkpoint/1" (UTF-8), sequence (int64), last event's
 * transaction order and position (int64 each), event count (int32), events root (32 bytes), previous
 * checkpoint hash (32 bytes; zeros before the first), sealed-at in Unix milliseconds (int64); big-endian.
 */

type Queryable = Pick<ClientBase, "query">;

export interface LedgerCheckpoint {
  sequence: number;
  last: LogPosition;
  eventCount: number;
  eventsRoot: Buffer;
  previousCheckpointHash: Buffer;
  checkpointHash: Buffer;
  signature: Buffer;
  publicKey: Buffer;
  sealedAt: Date;
}

export const firstPreviousCheckpointHash: Buffer = Buffer.alloc(chainHashBytes);
const domain = Buffer.from("won-ledger-checkpoint/1", "utf8");

export function checkpointHashOf(
  checkpoint: Pick<
    LedgerCheckpoint,
    "sequence" | "last" | "eventCount" | "eventsRoot" | "previousCheckpointHash" | "sealedAt"
  >,
): Buffer {
  const fixed = Buffer.alloc(8 * 3 + 4);
  fixed.writeBigInt64BE(BigInt(checkpoint.sequence), 0);
  fixed.writeBigInt64BE(checkpoint.last.commit, 8);
  fixed.writeBigInt64BE(checkpoint.last.prepare, 16);
  fixed.writeInt32BE(checkpoint.eventCount, 24);
  const sealedAt = Buffer.alloc(8);
  sealedAt.writeBigInt64BE(BigInt(checkpoint.sealedAt.getTime()));
  return createHash("sha256")
    .update(domain)
    .update(fixed)
    .update(checkpoint.eventsRoot)
    .update(checkpoint.previousCheckpointHash)
    .update(sealedAt)
    .digest();
}

// Aliases differ from the column names: ORDER BY would otherwise sort the text, "1000" before "999".
const columns = `sequence, last_transaction_order::text AS last_transaction_order_text, last_position::text AS last_position_text,
  event_count, events_root, previous_checkpoint_hash, checkpoint_hash, signature, public_key, sealed_at`;

interface CheckpointRow {
  sequence: string;
  last_transaction_order_text: string;
  last_position_text: string;
  event_count: number;
  events_root: Buffer;
  previous_checkpoint_hash: Buffer;
  checkpoint_hash: Buffer;
  signature: Buffer;
  public_key: Buffer;
  sealed_at: Date;
}

function fromRow(row: CheckpointRow): LedgerCheckpoint {
  return {
    sequence: Number(row.sequence),
    last: { commit: BigInt(row.last_transaction_order_text), prepare: BigInt(row.last_position_text) },
    eventCount: row.event_count,
    eventsRoot: row.events_root,
    previousCheckpointHash: row.previous_checkpoint_hash,
    checkpointHash: row.checkpoint_hash,
    signature: row.signature,
    publicKey: row.public_key,
    sealedAt: row.sealed_at,
  };
}

export async function latestCheckpoint(client: Queryable): Promise<LedgerCheckpoint | undefined> {
  const result = await client.query<CheckpointRow>(
    `SELECT ${columns} FROM ledger_checkpoints ORDER BY sequence DESC LIMIT 1`,
  );
  return result.rows[0] ? fromRow(result.rows[0]) : undefined;
}

/** Checkpoints in sequence order after `afterSequence`, at most `limit`. */
export async function checkpointsAfter(
  client: Queryable,
  afterSequence: number,
  limit: number,
): Promise<LedgerCheckpoint[]> {
  const result = await client.query<CheckpointRow>(
    `SELECT ${columns} FROM ledger_checkpoints WHERE sequence > $1 ORDER BY sequence LIMIT $2`,
    [afterSequence, limit],
  );
  return result.rows.map(fromRow);
}

/** The checkpoint whose range holds `position`, and the one before it (which bounds the range). */
export async function checkpointCovering(
  client: Queryable,
  position: LogPosition,
): Promise<{ checkpoint: LedgerCheckpoint; previous: LedgerCheckpoint | undefined } | undefined> {
  const result = await client.query<CheckpointRow>(
    `SELECT ${columns} FROM ledger_checkpoints
     WHERE (last_transaction_order, last_position) >= ($1, $2)
     ORDER BY last_transaction_order, last_position LIMIT 1`,
    [String(position.commit), String(position.prepare)],
  );
  if (!result.rows[0]) return undefined;
  const checkpoint = fromRow(result.rows[0]);
  const previous = await client.query<CheckpointRow>(
    `SELECT ${columns} FROM ledger_checkpoints WHERE sequence = $1`,
    [checkpoint.sequence - 1],
  );
  return { checkpoint, previous: previous.rows[0] ? fromRow(previous.rows[0]) : undefined };
}

export async function insertCheckpoint(client: Queryable, checkpoint: LedgerCheckpoint): Promise<void> {
  await client.query(
    `INSERT INTO ledger_checkpoints (sequence, last_transaction_order, last_position, event_count, events_root,
       previous_checkpoint_hash, checkpoint_hash, signature, public_key, sealed_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
    [
      checkpoint.sequence,
      String(checkpoint.last.commit),
      String(checkpoint.last.prepare),
      checkpoint.eventCount,
      checkpoint.eventsRoot,
      checkpoint.previousCheckpointHash,
      checkpoint.checkpointHash,
      checkpoint.signature,
      checkpoint.publicKey,
      checkpoint.sealedAt,
    ],
  );
}
