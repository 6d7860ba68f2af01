import { setTimeout as sleepFor } from "node:timers/promises";
import pg from "pg";
import { logStart } from "../store/log-position";
import { readSealableLeaves } from "./checkpoint-leaves";
import {
  checkpointHashOf,
  firstPreviousCheckpointHash,
  insertCheckpoint,
  type LedgerCheckpoint,
  latestCheckpoint,
} from "./ledger-checkpoint";
import type { LedgerSigningKey } from "./ledger-signing-key";
import { merkleRoot } from "./merkle-tree";

/**
 * Seals the global order after the fact, so writers never wait for one another: every `eventsMax` events,
 * or after `intervalMs` for the events that arrived since the last seal. One worker process leads (an
 * advisory lock on a dedicated connection, as the projection runner does); the others stand by.
 */

export const checkpointerLockKey = 7_310_004;

export interface SealOptions {
  eventsMax: number;
  /** Seal fewer than `eventsMax` events once the last checkpoint is this old. */
  intervalMs: number;
  /** Seal whatever is sealable now, full or not (the CLI, tests). */
  sealPartial?: boolean;
  /** Bound on the checkpoints written by one call. */
  checkpointsMax: number;
  now?: () => Date;
}

/** Writes the checkpoints that are due; returns them. */
export async function sealCheckpoints(
  client: pg.ClientBase,
  key: LedgerSigningKey,
  options: SealOptions,
): Promise<LedgerCheckpoint[]> {
  const now = options.now ?? (() => new Date());
  const sealed: LedgerCheckpoint[] = [];
  let previous = await latestCheckpoint(client);
  for (let count = 0; count < options.checkpointsMax; count++) {
    const leaves = await readSealableLeaves(client, previous?.last ?? logStart, options.eventsMax);
    if (leaves.length === 0) break;
    const sealedAt = now();
    const due =
      leaves.length === options.eventsMax ||
      options.sealPartial === true ||
      sealedAt.getTime() - (previous?.sealedAt.getTime() ?? 0) >= options.intervalMs;
    if (!due) break;
    const unsigned = {
      sequence: (previous?.sequence ?? 0) + 1,
      last: leaves[leaves.length - 1]!.position,
      eventCount: leaves.length,
      eventsRoot: merkleRoot(leaves.map((leaf) => leaf.leaf)),
      previousCheckpointHash: previous?.checkpointHash ?? firstPreviousCheckpointHash,
      sealedAt,
    };
    const checkpointHash = checkpointHashOf(unsigned);
    const checkpoint: LedgerCheckpoint = {
      ...unsigned,
      checkpointHash,
      signature: key.sign(checkpointHash),
      publicKey: key.publicKey,
    };
    await insertCheckpoint(client, checkpoint);
    sealed.push(checkpoint);
    previous = checkpoint;
    if (leaves.length < options.eventsMax) break;
  }
  return sealed;
}

export interface CheckpointerOptions {
  connectionString: string;
  key: LedgerSigningKey;
  seal: Omit<SealOptions, "sealPartial" | "now">;
  pollIntervalMs: number;
  onError?: (error: unknown) => void;
}

/** Leads when it holds the lock, stands by otherwise; returns when the signal aborts. */
export async function runCheckpointer(options: CheckpointerOptions, signal: AbortSignal): Promise<void> {
  while (!signal.aborted) {
    try {
      await sealWhileLeader(options, signal);
    } catch (error) {
      if (!signal.aborted) options.onError?.(error);
    }
    await sleepFor(options.pollIntervalMs, undefined, { signal }).catch(() => {});
  }
}

async function sealWhileLeader(options: CheckpointerOptions, signal: AbortSignal): Promise<void> {
  const client = new pg.Client({
    connectionString: options.connectionString,
    application_name: "ledger-checkpointer",
  });
  const lost = new AbortController();
  client.on("error", () => lost.abort());
  await client.connect();
  try {
    const locked = await client.query<{ locked: boolean }>("SELECT pg_try_advisory_lock($1) AS locked", [
      checkpointerLockKey,
    ]);
    if (!locked.rows[0]?.locked) return;
    const stop = AbortSignal.any([signal, lost.signal]);
    while (!stop.aborted) {
      await sealCheckpoints(client, options.key, options.seal);
      await sleepFor(options.pollIntervalMs, undefined, { signal: stop }).catch(() => {});
    }
  } finally {
    await client.end().catch(() => {});
  }
}
