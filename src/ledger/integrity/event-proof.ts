import type { ClientBase } from "pg";
import { formatLogPosition, logStart } from "../store/log-position";
import { readLeavesBetween } from "./checkpoint-leaves";
import { genesisHash } from "./event-hash";
import { checkpointCovering, checkpointHashOf, type LedgerCheckpoint } from "./ledger-checkpoint";
import { checkpointEventsLimit } from "./ledger-integrity";
import { verifySignature } from "./ledger-signing-key";
import { inclusionPath, rootFromInclusionPath } from "./merkle-tree";

/**
 * `ledger prove <event id>`: what links one event to a signed checkpoint — its chain hash and the hash it
 * chains to, its leaf index in the checkpoint and the RFC 6962 inclusion path to the checkpoint's root.
 * Anyone holding the ledger's public key can check it without the database. Before printing it, each link
 * is checked here too: the event's bytes hash to its chain hash, the path leads to the root, the checkpoint's
 * fields hash to its hash, and its signature is valid under the trusted key — so a proof of an altered event
 * or of a forged checkpoint says so (`isProven`).
 */

type Queryable = Pick<ClientBase, "query">;

export interface EventProof {
  event: {
    eventId: string;
    streamId: string;
    streamVersion: number;
    position: string;
    chainHash: string | null;
    previousHash: string;
    leaf: string;
    /** The event's stored bytes hash, after the hash it chains to, to its chain hash (not altered). */
    hashMatches: boolean;
  };
  checkpoint?: {
    sequence: number;
    last: string;
    eventCount: number;
    eventsRoot: string;
    previousCheckpointHash: string;
    checkpointHash: string;
    sealedAt: string;
    signature: string;
    publicKey: string;
    leafIndex: number;
    inclusionPath: string[];
    /** The path recomputed to the stored root here, before printing. */
    rootMatches: boolean;
    /** The checkpoint's fields hash to its stored hash. */
    hashMatches: boolean;
    /** Its signature under the trusted key; null when no key was given to check it with. */
    signatureValid: boolean | null;
  };
  /**
   * The checkpoint whose range holds the event when that range no longer holds what it sealed (events
   * inserted into it or removed from it, or a count no checkpoint seals): the event is sealed, but no path
   * to the root can be given from the log as it is now. Tampering, never "not sealed yet".
   */
  rangeBroken?: { sequence: number; problem: string };
}

/** Every link of the proof holds (a signature unchecked for want of a key does not count against it). */
export function isProven(proof: EventProof): boolean {
  const checkpoint = proof.checkpoint;
  return (
    proof.event.hashMatches &&
    checkpoint?.rootMatches === true &&
    checkpoint.hashMatches &&
    checkpoint.signatureValid !== false
  );
}

export async function proveEvent(
  client: Queryable,
  eventId: string,
  trustedPublicKey?: Buffer,
): Promise<EventProof | undefined> {
  const found = await client.query<{
    stream_id: string;
    stream_version: number;
    transaction_order: string;
    position: string;
    chain_hash: Buffer | null;
    previous_hash: Buffer | null;
    recomputed_hash: Buffer;
  }>(
    `SELECT linked.*, ledger_event_hash(coalesce(linked.previous_hash, $2), linked.stream_id, linked.stream_version,
              linked.event_id, linked.type, linked.schema_version, linked.data, linked.metadata) AS recomputed_hash
     FROM (
       SELECT event.stream_id, event.stream_version, event.transaction_order::text AS transaction_order,
              event.position::text AS position, event.chain_hash, event.event_id, event.type,
              event.schema_version, event.data, event.metadata,
              (SELECT previous.chain_hash FROM ledger_events previous
               WHERE previous.stream_id = event.stream_id AND previous.stream_version = event.stream_version - 1)
                 AS previous_hash
       FROM ledger_events event WHERE event.event_id = $1::uuid
     ) linked`,
    [eventId, genesisHash],
  );
  const row = found.rows[0];
  if (!row) return undefined;
  const position = { commit: BigInt(row.transaction_order), prepare: BigInt(row.position) };
  const covering = await checkpointCovering(client, position);
  const proof: EventProof = {
    event: {
      eventId,
      streamId: row.stream_id,
      streamVersion: row.stream_version,
      position: formatLogPosition(position),
      chainHash: row.chain_hash?.toString("hex") ?? null,
      previousHash: (row.previous_hash ?? genesisHash).toString("hex"),
      leaf: "",
      hashMatches: row.chain_hash?.equals(row.recomputed_hash) === true,
    },
  };
  if (!covering) return proof;
  const { checkpoint, previous } = covering;
  if (checkpoint.eventCount > checkpointEventsLimit) {
    proof.rangeBroken = {
      sequence: checkpoint.sequence,
      problem: `checkpoint #${checkpoint.sequence} claims ${checkpoint.eventCount} events, more than any checkpoint seals`,
    };
    return proof;
  }
  const rangeStart = previous?.last ?? logStart;
  // One more than it sealed: a range holding more events than its checkpoint counts is found, not cut short.
  const leaves = await readLeavesBetween(client, rangeStart, checkpoint.last, checkpoint.eventCount + 1);
  const leafIndex = leaves.findIndex((leaf) => leaf.eventId === eventId);
  if (leaves.length !== checkpoint.eventCount || leafIndex < 0) {
    proof.rangeBroken = {
      sequence: checkpoint.sequence,
      problem: `checkpoint #${checkpoint.sequence} sealed ${checkpoint.eventCount} events after ${formatLogPosition(rangeStart)} through ${formatLogPosition(checkpoint.last)}, the log now holds ${leaves.length > checkpoint.eventCount ? "more" : leaves.length} there (events inserted or removed)`,
    };
    return proof;
  }
  const leaf = leaves[leafIndex]!.leaf;
  const path = inclusionPath(
    leaves.map((entry) => entry.leaf),
    leafIndex,
  );
  proof.event.leaf = leaf.toString("hex");
  proof.checkpoint = {
    ...describeCheckpoint(checkpoint),
    leafIndex,
    inclusionPath: path.map((hash) => hash.toString("hex")),
    rootMatches: rootFromInclusionPath(leaf, leafIndex, checkpoint.eventCount, path).equals(
      checkpoint.eventsRoot,
    ),
    hashMatches: checkpointHashOf(checkpoint).equals(checkpoint.checkpointHash),
    signatureValid:
      trustedPublicKey === undefined
        ? null
        : verifySignature(trustedPublicKey, checkpointHashOf(checkpoint), checkpoint.signature),
  };
  return proof;
}

export function describeCheckpoint(checkpoint: LedgerCheckpoint) {
  return {
    sequence: checkpoint.sequence,
    last: formatLogPosition(checkpoint.last),
    eventCount: checkpoint.eventCount,
    eventsRoot: checkpoint.eventsRoot.toString("hex"),
    previousCheckpointHash: checkpoint.previousCheckpointHash.toString("hex"),
    checkpointHash: checkpoint.checkpointHash.toString("hex"),
    sealedAt: checkpoint.sealedAt.toISOString(),
    signature: checkpoint.signature.toString("hex"),
    publicKey: checkpoint.publicKey.toString("hex"),
  };
}
