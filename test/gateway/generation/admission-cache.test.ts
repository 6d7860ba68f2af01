import { describe, expect, it } from "vitest";
import { AdmissionCache } from "../../../src/gateway/generation/admission-cache";
import type {
  AdmissionRecord,
  AdmissionSnapshot,
} from "../../../src/gateway/generation/admission-read-model";
import type { LogPosition } from "../../../src/ledger/store/log-position";

/**
 * The admission cache's freshness rules, with its database read scripted so that the races it guards
 * against happen on cue. The read itself, and the cache inside the running gateway, are exercised against
 * PostgreSQL in admission-across-processes.test.ts.
 */

const at = (commit: number): LogPosition => ({ commit: BigInt(commit), prepare: 0n });

function record(keyHash: string, hasCredit = true): AdmissionRecord {
  return {
    keyId: `id-${keyHash}`,
    keyHash,
    owner: { kind: "user", id: "u" },
    issuedByUserId: "u",
    hasCredit,
    availableWon: hasCredit ? "100" : "0",
  };
}

/** A read the test answers by hand: each call waits until the test resolves it. */
function scriptedReads() {
  const calls: { keyHashes: readonly string[]; answer: (snapshot: AdmissionSnapshot) => void }[] = [];
  const read = (keyHashes: readonly string[]) =>
    new Promise<AdmissionSnapshot>((resolve) => calls.push({ keyHashes, answer: resolve }));
  return { calls, read };
}

function snapshot(position: number, ...records: AdmissionRecord[]): AdmissionSnapshot {
  return { position: at(position), records: new Map(records.map((entry) => [entry.keyHash, entry])) };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

function cacheWith(read: (keyHashes: readonly string[]) => Promise<AdmissionSnapshot>, nowMs = () => 0) {
  return new AdmissionCache({
    read,
    entriesMax: 100,
    idleMs: 1_000,
    refreshIntervalMs: 60_000,
    onRefreshError: (error) => {
      throw error;
    },
    nowMs,
  });
}

describe("admission cache", () => {
  it("reads a key once, then answers from memory", async () => {
    const reads = scriptedReads();
    const cache = cacheWith(reads.read);

    const first = cache.find("k1");
    reads.calls[0]!.answer(snapshot(1, record("k1")));
    expect(await first).toEqual(record("k1"));
    expect(await cache.find("k1")).toEqual(record("k1"));

    expect(reads.calls).toHaveLength(1);
  });

  it("never keeps an unknown key: each attempt reads again", async () => {
    const reads = scriptedReads();
    const cache = cacheWith(reads.read);

    for (let attempt = 0; attempt < 2; attempt += 1) {
      const found = cache.find("made-up");
      reads.calls[attempt]!.answer(snapshot(1));
      expect(await found).toBeUndefined();
    }
    expect(reads.calls).toHaveLength(2);
  });

  it("re-reads its keys when checkpoints advance, and forgets keys the projection no longer lists", async () => {
    const reads = scriptedReads();
    const cache = cacheWith(reads.read);
    const found = cache.find("k1");
    reads.calls[0]!.answer(snapshot(1, record("k1")));
    await found;

    cache.checkpointsAdvanced();
    expect(reads.calls[1]!.keyHashes).toEqual(["k1"]);
    reads.calls[1]!.answer(snapshot(2)); // deactivated or deleted
    await settle();

    const again = cache.find("k1");
    expect(reads.calls).toHaveLength(3);
    reads.calls[2]!.answer(snapshot(2));
    expect(await again).toBeUndefined();
  });

  it("uses a read that began before a refresh for its own request, but does not keep it", async () => {
    const reads = scriptedReads();
    const cache = cacheWith(reads.read);

    const slow = cache.find("k1"); // reads at position 1 …
    cache.checkpointsAdvanced(); // … while a refresh reads at position 2, after the key was deactivated
    reads.calls[1]!.answer(snapshot(2));
    await settle();
    reads.calls[0]!.answer(snapshot(1, record("k1")));
    expect(await slow).toEqual(record("k1"));

    const next = cache.find("k1");
    expect(reads.calls).toHaveLength(3);
    reads.calls[2]!.answer(snapshot(2));
    expect(await next).toBeUndefined();
  });

  it("catches up to a position by refreshing until a read has reached it", async () => {
    const reads = scriptedReads();
    const cache = cacheWith(reads.read);
    const found = cache.find("k1");
    reads.calls[0]!.answer(snapshot(1, record("k1", false)));
    await found;

    let caughtUp = false;
    const catchingUp = cache.catchUpTo(at(3)).then(() => {
      caughtUp = true;
    });
    reads.calls[1]!.answer(snapshot(2, record("k1", false))); // not there yet
    await settle();
    expect(caughtUp).toBe(false);
    reads.calls[2]!.answer(snapshot(3, record("k1", true))); // the top-up
    await catchingUp;

    expect((await cache.find("k1"))?.hasCredit).toBe(true);
    expect(reads.calls).toHaveLength(3);
  });

  it("drops keys unused for longer than the idle time at the next refresh", async () => {
    const reads = scriptedReads();
    let nowMs = 0;
    const cache = cacheWith(reads.read, () => nowMs);
    const found = cache.find("k1");
    reads.calls[0]!.answer(snapshot(1, record("k1")));
    await found;

    nowMs = 5_000;
    cache.checkpointsAdvanced();
    expect(reads.calls[1]!.keyHashes).toEqual([]);
    reads.calls[1]!.answer(snapshot(2));
    await settle();

    void cache.find("k1");
    expect(reads.calls).toHaveLength(3);
  });
});
