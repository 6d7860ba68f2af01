import type { ClientBase } from "pg";
import { limits } from "../../kernel/limits";
import type { AccountReference, ChargeBreakdownData } from "../../ledger/events";
import { genesisHash } from "../../ledger/integrity/event-hash";
import { type describeCheckpoint, proveEvent } from "../../ledger/integrity/event-proof";
import { latestCheckpoint } from "../../ledger/integrity/ledger-checkpoint";
import { usageStreamIdOf } from "../charging/charge-usage";

/**
 * The receipt of one request's charge, which its customer can check without trusting us (docs/statements-
 * and-receipts.md): each charge event exactly as stored (its data and metadata text, hashed byte for byte),
 * the hash it chains to, and the RFC 6962 path from its leaf to the signed checkpoint that seals it. The
 * verifier recomputes everything from the event's own bytes; the readable fields beside them are for people.
 */

export const receiptFormat = "won-ledger-receipt/1";
export const chargeEventTypes = ["UsageCharged"] as const;

export interface ReceiptEvent {
  eventId: string;
  streamId: string;
  streamVersion: number;
  type: string;
  schemaVersion: number;
  /** The stored json text of the event's data and metadata, byte for byte: what the chain hash covers. */
  data: string;
  metadata: string;
  position: string;
}

export type ReceiptSeal =
  | {
      status: "sealed";
      checkpoint: ReturnType<typeof describeCheckpoint>;
      leafIndex: number;
      inclusionPath: string[];
    }
  | {
      status: "not-sealed";
      /** When the next checkpoint is due to seal it (the checkpointer seals at least this often). */
      expectedBy: string;
      message: string;
    };

export interface ReceiptCharge {
  type: string;
  amountWon: string;
  breakdown: ChargeBreakdownData;
  event: ReceiptEvent;
  chainHash: string;
  previousHash: string;
  seal: ReceiptSeal;
}

export interface ChargeReceipt {
  format: typeof receiptFormat;
  requestId: string;
  account: AccountReference;
  keyId: string;
  model: string;
  endpoint: string;
  startedAt: string;
  /** What the request cost in all: the sum of its charge events' amounts. */
  amountWon: string;
  charges: ReceiptCharge[];
  /** Where the key that signs checkpoints is published (PEM). */
  publicKeyPath: "/ledger/public-key";
  issuedAt: string;
}

type Queryable = Pick<ClientBase, "query">;

interface ChargeEventRow {
  event_id: string;
  stream_id: string;
  stream_version: number;
  type: string;
  schema_version: number;
  data_text: string;
  metadata_text: string;
}

/** The charge events of a request, in stream order; empty when it has none (unknown or not charged yet). */
export async function readChargeEvents(client: Queryable, requestId: string): Promise<ChargeEventRow[]> {
  const result = await client.query<ChargeEventRow>(
    `SELECT event_id::text AS event_id, stream_id, stream_version, type, schema_version,
            data::text AS data_text, metadata::text AS metadata_text
     FROM ledger_events WHERE stream_id = $1 AND type = ANY($2::text[])
     ORDER BY stream_version`,
    [usageStreamIdOf(requestId), [...chargeEventTypes]],
  );
  return result.rows;
}

interface ChargeData {
  requestId: string;
  keyId: string;
  account: AccountReference;
  model: string;
  endpoint: string;
  startedAt: string;
  amountWon: string;
  breakdown: ChargeBreakdownData;
}

/** Who may see the receipt: the key that made the request, or a session of the paying account. */
export function receiptOwnerOf(rows: readonly ChargeEventRow[]): {
  keyId: string;
  account: AccountReference;
} {
  const first = JSON.parse(rows[0]!.data_text) as ChargeData;
  return { keyId: first.keyId, account: first.account };
}

export async function buildChargeReceipt(
  client: Queryable,
  rows: readonly ChargeEventRow[],
  now: Date,
): Promise<ChargeReceipt> {
  if (rows.length === 0) throw new Error("a receipt needs at least one charge event");
  const charges: ReceiptCharge[] = [];
  for (const row of rows) charges.push(await receiptChargeOf(client, row, now));
  const first = JSON.parse(rows[0]!.data_text) as ChargeData;
  const last = JSON.parse(rows[rows.length - 1]!.data_text) as ChargeData;
  return {
    format: receiptFormat,
    requestId: first.requestId,
    account: first.account,
    keyId: first.keyId,
    model: first.model,
    endpoint: first.endpoint,
    startedAt: first.startedAt,
    // The last charge's breakdown is the request's whole charge (a correction's covers the delivered usage).
    amountWon: last.breakdown.amountWon,
    charges,
    publicKeyPath: "/ledger/public-key",
    issuedAt: now.toISOString(),
  };
}

async function receiptChargeOf(client: Queryable, row: ChargeEventRow, now: Date): Promise<ReceiptCharge> {
  const proof = await proveEvent(client, row.event_id);
  if (!proof) throw new Error(`event ${row.event_id} vanished while its receipt was made`);
  // Sealed, but its checkpoint's range no longer holds what it sealed: no path to the root can be given, and
  // "not sealed yet, ask again" would be said forever. Never answered (500, logged), as a statement that does
  // not add up: `ledger verify` names the tampering.
  if (proof.rangeBroken)
    throw new Error(
      `no receipt for event ${row.event_id}: ${proof.rangeBroken.problem}; run npm run ledger -- verify`,
    );
  const data = JSON.parse(row.data_text) as ChargeData;
  // An event written before the chain existed is sealed by its hash over the genesis hash (checkpoint-leaves.ts).
  const previousHash =
    proof.event.chainHash === null ? genesisHash.toString("hex") : proof.event.previousHash;
  const event: ReceiptEvent = {
    eventId: row.event_id,
    streamId: row.stream_id,
    streamVersion: row.stream_version,
    type: row.type,
    schemaVersion: row.schema_version,
    data: row.data_text,
    metadata: row.metadata_text,
    position: proof.event.position,
  };
  return {
    type: row.type,
    amountWon: data.amountWon,
    breakdown: data.breakdown,
    event,
    chainHash: proof.event.chainHash ?? proof.event.leaf,
    previousHash,
    seal: proof.checkpoint
      ? {
          status: "sealed",
          checkpoint: {
            sequence: proof.checkpoint.sequence,
            last: proof.checkpoint.last,
            eventCount: proof.checkpoint.eventCount,
            eventsRoot: proof.checkpoint.eventsRoot,
            previousCheckpointHash: proof.checkpoint.previousCheckpointHash,
            checkpointHash: proof.checkpoint.checkpointHash,
            sealedAt: proof.checkpoint.sealedAt,
            signature: proof.checkpoint.signature,
            publicKey: proof.checkpoint.publicKey,
          },
          leafIndex: proof.checkpoint.leafIndex,
          inclusionPath: proof.checkpoint.inclusionPath,
        }
      : await notSealedYet(client, now),
  };
}

async function notSealedYet(client: Queryable, now: Date): Promise<ReceiptSeal> {
  const latest = await latestCheckpoint(client);
  const dueMs = Math.max(
    now.getTime(),
    (latest?.sealedAt.getTime() ?? now.getTime()) + limits.checkpointIntervalMs,
  );
  const expectedBy = new Date(dueMs + limits.checkpointPollIntervalMs).toISOString();
  return {
    status: "not-sealed",
    expectedBy,
    message: `not sealed by a signed checkpoint yet; the next checkpoint is due by ${expectedBy}: ask for the receipt again then`,
  };
}
