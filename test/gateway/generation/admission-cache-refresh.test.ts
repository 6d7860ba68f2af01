import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type FixtureKey,
  keyIssued,
  keyStatusChanged,
  keysOfAccounts,
  toppedUp,
} from "../../../bench/support/admission-fixtures";
import { AdmissionCache } from "../../../src/gateway/generation/admission-cache";
import { admissionProjections, readAdmission } from "../../../src/gateway/generation/admission-read-model";
import { accountNameOf } from "../../../src/ledger/events";
import { formatCheckpointNotification } from "../../../src/ledger/projection/checkpoint-notification";
import { checkpointChannel } from "../../../src/ledger/projection/projection-runner";
import type { StreamAppend } from "../../../src/ledger/store/event-store";
import { isAtOrAfter, type LogPosition } from "../../../src/ledger/store/log-position";
import { runProjections } from "../../billing/billing-ledger-fixtures";
import { type LedgerHarness, openLedgerHarness } from "../../support/ledger-harness";
import { eventually } from "../../workers/queue-test-support";

/**
 * The admission cache on real PostgreSQL, fed by a live projection runner's notifications: a batch
 * re-reads the cached keys of the accounts whose keys it changed, one key of each other account it touched
 * (for its funds), and nothing else; a notification that cannot vouch for
 * the rest (an older runner's empty one, one after a missed batch) re-reads them all; and a command that
 * waits for the projections finds its own change in the cache (C4). The cache's timer is not started, so
 * only notifications and waits make it read. Test files share a server, whose other transactions can delay
 * when events become visible: waits are generous.
 */

const accountCount = 40;
const keysPerAccount = 5;
const projectionWaitMs = 30_000;
const keys = keysOfAccounts("refresh", accountCount, keysPerAccount);
/** Their keys are cached as "no credit" until the last two tests top them up. */
const brokeAccounts = [keys[keys.length - 1]!.owner, keys[keys.length - 1 - keysPerAccount]!.owner];

let harness: LedgerHarness;
let projections: Awaited<ReturnType<typeof runProjections>>;
let cache: AdmissionCache;
/** The key hashes of each read the cache made, in order. */
let reads: string[][] = [];

async function appendAll(appends: readonly StreamAppend[]): Promise<LogPosition> {
  const outcomes = await harness.store.appendBatch(appends);
  const positions = outcomes.map((outcome) => {
    if (outcome.status === "rejected") throw outcome.reason;
    return outcome.value.position;
  });
  return positions.reduce((last, position) => (isAtOrAfter(position, last) ? position : last));
}

const hashesOf = (account: FixtureKey["owner"]) =>
  keys.filter((key) => key.owner.id === account.id).map((key) => key.keyHash);
const sorted = (keyHashes: readonly string[]) => [...keyHashes].sort();

/** Waits until the cache has caught up with `position` by itself, without asking it to. */
async function cacheReaches(position: LogPosition): Promise<void> {
  await eventually(
    "the cache reaches the position",
    async () => isAtOrAfter(cache.caughtUpTo, position),
    projectionWaitMs,
  );
}

/** A cache reading the harness's ledger, telling `recordRead` the key hashes of each read it makes. */
function cacheOnTheLedger(
  recordRead: (keyHashes: string[]) => void,
  refreshIntervalMs: number,
): AdmissionCache {
  return new AdmissionCache({
    read: (keyHashes) => {
      recordRead([...keyHashes]);
      return readAdmission(harness.ledger.pool, keyHashes);
    },
    entriesMax: 10_000,
    idleMs: 3_600_000,
    refreshIntervalMs,
    onRefreshError: (error) => {
      throw error;
    },
  });
}

beforeAll(async () => {
  harness = await openLedgerHarness("admission_refresh");
  const owners = [...new Map(keys.map((key) => [key.owner.id, key.owner])).values()];
  await appendAll(keys.map(keyIssued));
  const last = await appendAll(
    owners.filter((owner) => !brokeAccounts.includes(owner)).map((owner) => toppedUp(owner, "100", "first")),
  );
  projections = await runProjections(harness);
  cache = cacheOnTheLedger((keyHashes) => reads.push(keyHashes), 3_600_000);
  projections.waiter.addLocalReadModel(cache);
  await projections.waiter.waitFor(last, admissionProjections, projectionWaitMs);
  for (const key of keys) expect(await cache.find(key.keyHash)).toBeDefined();
}, 60_000);

afterAll(async () => {
  await projections?.stop();
  await harness?.dispose();
});

describe("the admission cache, refreshed by projection notifications", () => {
  it("re-reads one key of an account a batch only moved money of, and gives its funds to the others", async () => {
    const account = keys[7 * keysPerAccount]!.owner;
    const availableBefore = Number((await cache.find(hashesOf(account)[0]!))!.availableWon);
    reads = [];

    await cacheReaches(await appendAll([toppedUp(account, "5", "second")]));

    expect(reads.map((keyHashes) => keyHashes.length)).toEqual([1]);
    expect(hashesOf(account)).toContain(reads[0]![0]);
    for (const keyHash of hashesOf(account))
      expect(Number((await cache.find(keyHash))!.availableWon)).toBe(availableBefore + 5);
  });

  it("re-reads every key of an account whose keys a batch changed", async () => {
    const key = keys[8 * keysPerAccount]!;
    reads = [];

    // Made active again (it was): a key event all the same. Revocations are the tests below.
    await cacheReaches(await appendAll([keyStatusChanged(key, 1, "reactivated")]));

    expect(reads.map(sorted)).toEqual([sorted(hashesOf(key.owner))]);
    for (const keyHash of hashesOf(key.owner)) expect(await cache.find(keyHash)).toBeDefined();
  });

  it("reads nothing for a batch that touched no account it holds keys of", async () => {
    reads = [];

    await cacheReaches(await appendAll([toppedUp({ kind: "user", id: "keyless" }, "5", "keyless")]));

    expect(reads).toEqual([]);
  });

  it("re-reads every key on an empty notification, as an older runner sends", async () => {
    reads = [];

    await harness.ledger.pool.query("SELECT pg_notify($1, '')", [checkpointChannel]);

    await eventually("the cache re-read", async () => reads.length > 0, projectionWaitMs);
    expect(sorted(reads[0]!)).toEqual(sorted(keys.map((key) => key.keyHash)));
  });

  it("re-reads every key when a notified batch begins after what it has seen", async () => {
    const seen = cache.caughtUpTo;
    const missedUpTo = { commit: seen.commit + 1_000n, prepare: 0n };
    const touched = new Set([accountNameOf(keys[0]!.owner)]);
    const payload = formatCheckpointNotification(
      { from: missedUpTo, to: { commit: seen.commit + 2_000n, prepare: 0n }, touched },
      10,
    );
    reads = [];

    await harness.ledger.pool.query("SELECT pg_notify($1, $2)", [checkpointChannel, payload]);

    await eventually("the cache re-read", async () => reads.length > 0, projectionWaitMs);
    expect(sorted(reads[0]!)).toEqual(sorted(keys.map((key) => key.keyHash)));
  });

  it("answers a command's next request with its change: a revoked key refused, a top-up admitted", async () => {
    const revoked = keys[3]!;
    const [brokeAccount] = brokeAccounts;
    const brokeKey = keys.find((key) => key.owner === brokeAccount)!;
    expect(await cache.find(revoked.keyHash)).toBeDefined();
    expect((await cache.find(brokeKey.keyHash))?.hasCredit).toBe(false);

    const revokedAt = await appendAll([keyStatusChanged(revoked, 0, "revoked")]);
    await projections.waiter.waitFor(revokedAt, admissionProjections, projectionWaitMs);
    expect(await cache.find(revoked.keyHash)).toBeUndefined();

    const toppedUpAt = await appendAll([toppedUp(brokeAccount!, "10", "rescue")]);
    await projections.waiter.waitFor(toppedUpAt, admissionProjections, projectionWaitMs);
    expect((await cache.find(brokeKey.keyHash))?.hasCredit).toBe(true);
  });

  // A command's wait may find the copy behind and read every key itself (when the projections are read
  // before the notification arrives): here the notification alone must carry the change, as it does to
  // every other process.
  it("carries a change to the cache by the notification alone: a revoked key refused, a top-up admitted", async () => {
    const revoked = keys[11]!;
    const [, brokeAccount] = brokeAccounts;
    const brokeKey = keys.find((key) => key.owner === brokeAccount)!;
    expect(await cache.find(revoked.keyHash)).toBeDefined();
    expect((await cache.find(brokeKey.keyHash))?.hasCredit).toBe(false);

    await cacheReaches(
      await appendAll([keyStatusChanged(revoked, 0, "revoked"), toppedUp(brokeAccount!, "10", "rescue")]),
    );

    expect(await cache.find(revoked.keyHash)).toBeUndefined();
    expect((await cache.find(brokeKey.keyHash))?.hasCredit).toBe(true);
  });
});

describe("the admission cache's timer, when every notification is lost", () => {
  it("reads only where the projections are while nothing moves, and every key once they moved unannounced", async () => {
    const [revoked, kept] = [keys[20]!, keys[21]!];
    const timerReads: string[][] = [];
    // Not handed to the waiter: no notification ever reaches this copy.
    const deaf = cacheOnTheLedger((keyHashes) => timerReads.push(keyHashes), 50);
    try {
      expect(await deaf.find(revoked.keyHash)).toBeDefined();
      expect(await deaf.find(kept.keyHash)).toBeDefined();
      deaf.start();
      const { position } = await readAdmission(harness.ledger.pool, []);
      await eventually(
        "the copy is fresh",
        async () => isAtOrAfter(deaf.caughtUpTo, position),
        projectionWaitMs,
      );

      timerReads.length = 0;
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(timerReads.length).toBeGreaterThanOrEqual(3);
      expect(timerReads.filter((keyHashes) => keyHashes.length > 0)).toEqual([]);

      const revokedAt = await appendAll([keyStatusChanged(revoked, 0, "revoked by the timer")]);
      await projections.waiter.waitFor(revokedAt, admissionProjections, projectionWaitMs);
      await eventually(
        "the timer re-read the revoked key",
        async () => (await deaf.find(revoked.keyHash)) === undefined,
        projectionWaitMs,
      );
      expect(timerReads.map(sorted)).toContainEqual(sorted([revoked.keyHash, kept.keyHash]));
      expect(await deaf.find(kept.keyHash)).toBeDefined();
    } finally {
      deaf.stop();
    }
  });
});
