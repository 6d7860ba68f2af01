import type { ClientBase } from "pg";
import { formatLogPosition, type LogPosition, logStart } from "../store/log-position";
import { readLeavesBetween } from "./checkpoint-leaves";
import { eventChainHash, genesisHash } from "./event-hash";
import {
  checkpointHashOf,
  checkpointsAfter,
  firstPreviousCheckpointHash,
  type LedgerCheckpoint,
} from "./ledger-checkpoint";
import { verifySignature } from "./ledger-signing-key";
import { merkleRoot } from "./merkle-tree";

/**
 * `ledger verify`, first half: every stream's hash chain recomputed from the stored events, then every
 * checkpoint: its chain, its signature (against the configured key only) and the root of the events it
 * seals. Both passes stream the log in pages, so memory stays bounded whatever its size. Each problem names
 * the first broken link where it was found; later links of the same stream are consequences, not reported.
 */

type Queryable = Pick<ClientBase, "query">;

export interface IntegrityReport {
  /** The problems found, the first `problemsShownMax` of them. */
  problems: string[];
  /** Every problem found, those not shown included. */
  problemCount: number;
  eventCount: number;
  streamCount: number;
  checkpointCount: number;
  /** Events after the last checkpoint: chained, not sealed yet. */
  unsealedEventCount: number;
  signaturesChecked: boolean;
}

const pageSize = 10_000;
/** Problems a report names: a log altered throughout would otherwise be a page per event. */
export const problemsShownMax = 100;

/** The problems a pass finds: every one counted, the first `problemsShownMax` kept. */
class Problems {
  readonly shown: string[] = [];
  count = 0;

  add(problem: string): void {
    this.count++;
    if (this.shown.length < problemsShownMax) this.shown.push(problem);
  }
}
/** A checkpoint claiming more events than this is itself a problem: verify never loads more leaves. */
export const checkpointEventsLimit = 100_000;

export async function verifyIntegrity(
  client: Queryable,
  trustedPublicKey: Buffer | undefined,
): Promise<IntegrityReport> {
  const problems = new Problems();
  const chains = await verifyChains(client, problems);
  const checkpoints = await verifyCheckpoints(client, trustedPublicKey, problems);
  return {
    problems: problems.shown,
    problemCount: problems.count,
    eventCount: chains.eventCount,
    streamCount: chains.streamCount,
    checkpointCount: checkpoints.checkpointCount,
    unsealedEventCount: checkpoints.unsealedEventCount,
    signaturesChecked: trustedPublicKey !== undefined,
  };
}

interface ChainRow {
  stream_id: string;
  stream_version: number;
  event_id: string;
  type: string;
  schema_version: number;
  data: string;
  metadata: string;
  chain_hash: Buffer | null;
}

async function verifyChains(
  client: Queryable,
  problems: Problems,
): Promise<{ eventCount: number; streamCount: number }> {
  let eventCount = 0;
  let streamCount = 0;
  let previous: ChainRow | undefined;
  let brokenStream: string | undefined;
  for (;;) {
    const page = await client.query<ChainRow>({
      name: "ledger-verify-chains",
      // Keyset over the (stream_id, stream_version) unique index: one stream after another, in version order.
      text: `SELECT stream_id, stream_version, event_id::text AS event_id, type, schema_version, data::text AS data,
                    metadata::text AS metadata, chain_hash
             FROM ledger_events WHERE (stream_id, stream_version) > ($1, $2)
             ORDER BY stream_id, stream_version LIMIT $3`,
      values: [previous?.stream_id ?? "", previous?.stream_version ?? -2_147_483_648, pageSize],
    });
    for (const row of page.rows) {
      eventCount++;
      const predecessor = previous?.stream_id === row.stream_id ? previous : undefined;
      if (!predecessor) streamCount++;
      previous = row;
      if (brokenStream === row.stream_id) continue;
      const problem = chainProblem(row, predecessor);
      if (problem) {
        brokenStream = row.stream_id;
        problems.add(problem);
      }
    }
    if (page.rows.length < pageSize) return { eventCount, streamCount };
  }
}

function chainProblem(row: ChainRow, predecessor: ChainRow | undefined): string | undefined {
  const link = {
    streamId: row.stream_id,
    streamVersion: row.stream_version,
    eventId: row.event_id,
    expectedVersion: predecessor ? predecessor.stream_version + 1 : 0,
  };
  if (row.stream_version !== link.expectedVersion)
    return describeBrokenLink({ ...link, problem: "versions-missing" });
  if (row.chain_hash === null) {
    // Only events written before the chain existed have no hash, and none follows a hashed one.
    return predecessor?.chain_hash ? describeBrokenLink({ ...link, problem: "hash-removed" }) : undefined;
  }
  const expected = eventChainHash(predecessor?.chain_hash ?? genesisHash, {
    streamId: row.stream_id,
    streamVersion: row.stream_version,
    eventId: row.event_id,
    type: row.type,
    schemaVersion: row.schema_version,
    dataText: row.data,
    metadataText: row.metadata,
  });
  return expected.equals(row.chain_hash)
    ? undefined
    : describeBrokenLink({ ...link, problem: "hash-differs" });
}

/** A link of a stream's hash chain that does not hold: the event, and what is wrong with it. */
export interface BrokenLink {
  streamId: string;
  streamVersion: number;
  eventId: string;
  /** The version its stream's previous event calls for. */
  expectedVersion: number;
  problem: "versions-missing" | "hash-removed" | "hash-differs";
}

/** A broken link in the words `ledger verify` and `ledger rebuild` both say it. */
export function describeBrokenLink(link: BrokenLink): string {
  const where = `stream ${link.streamId} version ${link.streamVersion} (event ${link.eventId})`;
  switch (link.problem) {
    case "versions-missing": {
      const missing =
        link.expectedVersion === link.streamVersion - 1
          ? `version ${link.expectedVersion} is`
          : `versions ${link.expectedVersion}–${link.streamVersion - 1} are`;
      return `${where}: ${missing} missing from the stream (deleted)`;
    }
    case "hash-removed":
      return `${where}: its chain hash was removed`;
    case "hash-differs":
      return `${where}: chain hash does not match the event (its contents, version or predecessor were changed)`;
    default: {
      const unreachable: never = link.problem;
      return unreachable;
    }
  }
}

async function verifyCheckpoints(
  client: Queryable,
  trustedPublicKey: Buffer | undefined,
  problems: Problems,
): Promise<{ checkpointCount: number; unsealedEventCount: number }> {
  const report = (problem: string) => problems.add(problem);
  let checkpointCount = 0;
  let expectedSequence = 1;
  let previousHash = firstPreviousCheckpointHash;
  let rangeStart: LogPosition = logStart;
  for (;;) {
    const page = await checkpointsAfter(client, expectedSequence - 1, 1_000);
    for (const checkpoint of page) {
      checkpointCount++;
      if (checkpoint.sequence !== expectedSequence) {
        const missing =
          checkpoint.sequence === expectedSequence + 1
            ? `checkpoint #${expectedSequence} is`
            : `checkpoints #${expectedSequence}–#${checkpoint.sequence - 1} are`;
        report(
          `${missing} missing (removed): checkpoint #${checkpoint.sequence} follows #${expectedSequence - 1}`,
        );
      } else {
        for (const problem of await checkpointProblems(
          client,
          checkpoint,
          previousHash,
          rangeStart,
          trustedPublicKey,
        ))
          report(problem);
      }
      expectedSequence = checkpoint.sequence + 1;
      previousHash = checkpoint.checkpointHash;
      rangeStart = checkpoint.last;
    }
    if (page.length < 1_000) break;
  }
  const unsealed = await client.query<{ count: string }>(
    "SELECT count(*) AS count FROM ledger_events WHERE (transaction_order, position) > ($1, $2)",
    [String(rangeStart.commit), String(rangeStart.prepare)],
  );
  return { checkpointCount, unsealedEventCount: Number(unsealed.rows[0]!.count) };
}

async function checkpointProblems(
  client: Queryable,
  checkpoint: LedgerCheckpoint,
  previousHash: Buffer,
  rangeStart: LogPosition,
  trustedPublicKey: Buffer | undefined,
): Promise<string[]> {
  const name = `checkpoint #${checkpoint.sequence}`;
  const problems: string[] = [];
  if (!checkpoint.previousCheckpointHash.equals(previousHash)) {
    problems.push(
      `${name}: does not chain to checkpoint #${checkpoint.sequence - 1} (previous hash differs)`,
    );
  }
  const recomputed = checkpointHashOf(checkpoint);
  if (!recomputed.equals(checkpoint.checkpointHash)) problems.push(`${name}: hash does not match its fields`);
  if (trustedPublicKey && !verifySignature(trustedPublicKey, recomputed, checkpoint.signature)) {
    problems.push(`${name}: signature is not valid under the ledger signing key (forged or altered)`);
  }
  if (checkpoint.eventCount > checkpointEventsLimit) {
    problems.push(`${name}: claims ${checkpoint.eventCount} events, more than any checkpoint seals`);
    return problems;
  }
  const leaves = await readLeavesBetween(client, rangeStart, checkpoint.last, checkpoint.eventCount + 1);
  const range = `events after ${formatLogPosition(rangeStart)} through ${formatLogPosition(checkpoint.last)}`;
  if (leaves.length !== checkpoint.eventCount) {
    const change = leaves.length < checkpoint.eventCount ? "removed" : "inserted";
    problems.push(
      `${name}: sealed ${checkpoint.eventCount} ${range}, the log now holds ${leaves.length === checkpoint.eventCount + 1 ? "more" : leaves.length} there (events ${change})`,
    );
  } else if (!merkleRoot(leaves.map((leaf) => leaf.leaf)).equals(checkpoint.eventsRoot)) {
    problems.push(
      `${name}: the ${range} no longer match its root (an event was changed or the order altered)`,
    );
  }
  return problems;
}
