import { setTimeout as sleepFor } from "node:timers/promises";
import type pg from "pg";
import { advisoryLockKeys } from "../../database/advisory-lock-keys";
import { contendForLead } from "../../database/advisory-lock-leader";
import { databaseSessionLimits } from "../../kernel/limits";
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
 * or after `intervalMs` for the events that arrived since the last seal. One worker process leads
 * (advisory-lock-leader.ts); the others stand by. A deposed leader still sealing cannot fork the chain: each
 * checkpoint's sequence is unique, so the second insert of one fails.
 */

/**
 * Each statement of the checkpointer's session gives up after this long: reading `checkpointEventsMax`
 * leaves takes well under a second, and a dead connection must not hang the leader.
 */
const { checkpointerQueryTimeoutMs } = databaseSessionLimits;

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
  /** Called when sealing starts failing (a lost session, a failed statement), not on every retry. */
  onError?: (error: unknown) => void;
  /** Called when it works again after `onError`. */
  onRecovered?: () => void;
}

/** Leads when it holds the lock, stands by otherwise; returns when the signal aborts. */
export async function runCheckpointer(options: CheckpointerOptions, signal: AbortSignal): Promise<void> {
  await contendForLead(
    {
      connectionString: options.connectionString,
      lockKey: advisoryLockKeys.ledgerCheckpointer,
      applicationName: "ledger-checkpointer",
      standbyRetryMs: options.pollIntervalMs,
      queryTimeoutMs: checkpointerQueryTimeoutMs,
      lead: (session, term) => sealWhileLeading(session, term, options),
      onFailing: options.onError,
      onRecovered: options.onRecovered,
    },
    signal,
  );
}

/** One term: seals what is due every `pollIntervalMs` until the term ends. */
async function sealWhileLeading(
  session: pg.Client,
  term: AbortSignal,
  options: CheckpointerOptions,
): Promise<void> {
  while (!term.aborted) {
    await sealCheckpoints(session, options.key, options.seal);
    await sleepFor(options.pollIntervalMs, undefined, { signal: term }).catch(() => {});
  }
}
