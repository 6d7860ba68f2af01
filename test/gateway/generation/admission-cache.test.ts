import { afterEach, describe, expect, it, vi } from "vitest";
import { AdmissionCache } from "../../../src/gateway/generation/admission-cache";
import type {
  AdmissionRecord,
  AdmissionSnapshot,
} from "../../../src/gateway/generation/admission-read-model";
import type { CheckpointChange } from "../../../src/ledger/projection/checkpoint-notification";
import type { LogPosition } from "../../../src/ledger/store/log-position";

/**
 * The admission cache's freshness rules, with its database read scripted so that the races it guards
 * against happen on cue. The read itself, and the cache inside the running gateway, are exercised against
 * PostgreSQL in admission-across-processes.test.ts.
 */

const at = (commit: number): LogPosition => ({ commit: BigInt(commit), prepare: 0n });

function record(keyHash: string, hasCredit = true, ownerId = "u"): AdmissionRecord {
  return {
    keyId: `id-${keyHash}`,
    keyHash,
    owner: { kind: "user", id: ownerId },
    issuedByUserId: ownerId,
    hasCredit,
    availableWon: hasCredit ? "100" : "0",
    allowedModels: null,
    hasSpendOrRateLimit: false,
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

/** The cache's first read (of an unknown key) answered with `entry` at position 1: the cache now holds it. */
async function findFirst(
  cache: AdmissionCache,
  reads: ReturnType<typeof scriptedReads>,
  entry: AdmissionRecord = record("k1"),
) {
  const found = cache.find(entry.keyHash);
  reads.calls[0]!.answer(snapshot(1, entry));
  await found;
}

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

  it("reads the keys that arrive while one is read in one statement after it: a flood costs a read per round trip", async () => {
    const reads = scriptedReads();
    const cache = cacheWith(reads.read);

    const first = cache.find("made-up-0");
    const others = Array.from({ length: 50 }, (_, index) => cache.find(`made-up-${index + 1}`));
    const again = cache.find("made-up-1");
    expect(reads.calls.map((call) => call.keyHashes)).toEqual([["made-up-0"]]);
    reads.calls[0]!.answer(snapshot(1));
    expect(await first).toBeUndefined();
    await settle();

    expect(reads.calls).toHaveLength(2);
    expect(reads.calls[1]!.keyHashes).toEqual(
      Array.from({ length: 50 }, (_, index) => `made-up-${index + 1}`),
    );
    reads.calls[1]!.answer(snapshot(1, record("made-up-7")));
    expect((await Promise.all(others)).filter(Boolean)).toEqual([record("made-up-7")]);
    expect(await again).toBeUndefined();
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
    await findFirst(cache, reads);

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
    await findFirst(cache, reads, record("k1", false));

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
    await findFirst(cache, reads);

    nowMs = 5_000;
    cache.checkpointsAdvanced();
    expect(reads.calls[1]!.keyHashes).toEqual([]);
    reads.calls[1]!.answer(snapshot(2));
    await settle();

    void cache.find("k1");
    expect(reads.calls).toHaveLength(3);
  });

  describe("refreshed by what a batch touched", () => {
    /** Keys a1, a2 of account user:a, b1, b2 of user:b, c1 of user:c. */
    const owned = [
      ["a1", "a"],
      ["a2", "a"],
      ["b1", "b"],
      ["b2", "b"],
      ["c1", "c"],
    ] as const;
    const recordsOf = (...keyHashes: string[]) =>
      owned
        .filter(([keyHash]) => keyHashes.includes(keyHash))
        .map(([keyHash, owner]) => record(keyHash, true, owner));
    const batch = (from: number, to: number, ...owners: string[]): CheckpointChange => ({
      from: at(from),
      to: at(to),
      touched: new Set(owners.map((owner) => `user:${owner}`)),
    });

    /** Every key cached, then one full refresh at position 1: the copy has seen the log up to 1. */
    async function filledCache() {
      const reads = scriptedReads();
      const cache = cacheWith(reads.read);
      for (const [keyHash] of owned) {
        const found = cache.find(keyHash);
        reads.calls.at(-1)!.answer(snapshot(1, ...recordsOf(keyHash)));
        await found;
      }
      cache.checkpointsAdvanced();
      reads.calls.at(-1)!.answer(snapshot(1, ...recordsOf(...owned.map(([keyHash]) => keyHash))));
      await settle();
      reads.calls.length = 0;
      return { reads, cache };
    }

    it("re-reads one key of each account a batch only moved money of, and gives its funds to the others", async () => {
      const { reads, cache } = await filledCache();

      cache.checkpointsAdvanced({ ...batch(1, 2, "a", "b"), keysChanged: new Set() });
      expect(reads.calls.map((call) => [...call.keyHashes].sort())).toEqual([["a1", "b1"]]);
      reads.calls[0]!.answer(
        snapshot(3, { ...record("a1", true, "a"), availableWon: "250" }, record("b1", false, "b")),
      );
      await settle();

      expect(cache.caughtUpTo).toEqual(at(2));
      expect(await cache.find("a2")).toEqual({ ...record("a2", true, "a"), availableWon: "250" });
      expect(await cache.find("b2")).toEqual(record("b2", false, "b"));
      expect(await cache.find("c1")).toEqual(record("c1", true, "c"));
      expect(reads.calls).toHaveLength(1);
    });

    it("forgets an account's keys when the key read for its funds is gone, and reads them when next used", async () => {
      const { reads, cache } = await filledCache();

      cache.checkpointsAdvanced({ ...batch(1, 2, "b"), keysChanged: new Set() });
      reads.calls[0]!.answer(snapshot(3)); // b1 revoked by a later batch
      await settle();

      expect(cache.caughtUpTo).toEqual(at(2));
      const found = cache.find("b2");
      expect(reads.calls.map((call) => call.keyHashes)).toEqual([["b1"], ["b2"]]);
      reads.calls[1]!.answer(snapshot(3, record("b2", true, "b")));
      expect(await found).toEqual(record("b2", true, "b"));
    });

    it("re-reads the keys of the accounts whose keys changed, and of every touched one when not told", async () => {
      const { reads, cache } = await filledCache();

      cache.checkpointsAdvanced({ ...batch(1, 2, "a", "b"), keysChanged: new Set(["user:b"]) });
      // Merged while that read is in flight: a batch of a runner of an earlier release, which does not say
      // whose keys changed, and one that says none did.
      cache.checkpointsAdvanced(batch(2, 3, "a"));
      cache.checkpointsAdvanced({ ...batch(3, 4, "c"), keysChanged: new Set() });
      reads.calls[0]!.answer(snapshot(2, ...recordsOf("b1", "b2", "a1")));
      await settle();

      expect(reads.calls.map((call) => [...call.keyHashes].sort())).toEqual([
        ["a1", "b1", "b2"],
        ["a1", "a2", "c1"],
      ]);
    });

    it("re-reads only the cached keys of the accounts a batch following on from its copy touched", async () => {
      const { reads, cache } = await filledCache();

      cache.checkpointsAdvanced(batch(1, 2, "b"));
      expect(reads.calls.map((call) => [...call.keyHashes].sort())).toEqual([["b1", "b2"]]);
      reads.calls[0]!.answer(snapshot(2, record("b1", false, "b"))); // b2 deactivated, b1 out of credit
      await settle();

      expect(cache.caughtUpTo).toEqual(at(2));
      expect((await cache.find("b1"))?.hasCredit).toBe(false);
      expect(await cache.find("a1")).toEqual(record("a1", true, "a"));
      await cache.catchUpTo(at(2));
      expect(reads.calls).toHaveLength(1);
      const gone = cache.find("b2");
      expect(reads.calls).toHaveLength(2);
      reads.calls[1]!.answer(snapshot(2));
      expect(await gone).toBeUndefined();
    });

    it("counts a partial read only up to its batch's end, however far the read saw", async () => {
      const { reads, cache } = await filledCache();

      cache.checkpointsAdvanced(batch(1, 2, "a"));
      // The projections had applied (2, 3] too, which may have changed b's keys: not re-read here.
      reads.calls[0]!.answer(snapshot(3, ...recordsOf("a1", "a2")));
      await settle();

      expect(cache.caughtUpTo).toEqual(at(2));
    });

    it("reads nothing for a batch that touched no cached account, and counts itself caught up", async () => {
      const { reads, cache } = await filledCache();

      cache.checkpointsAdvanced(batch(1, 2, "nobody"));
      await settle();

      expect(reads.calls).toHaveLength(0);
      expect(cache.caughtUpTo).toEqual(at(2));
    });

    it("re-reads everything when a batch begins after what it has seen (one was missed)", async () => {
      const { reads, cache } = await filledCache();

      cache.checkpointsAdvanced(batch(2, 3, "b"));

      expect(reads.calls.map((call) => call.keyHashes.length)).toEqual([owned.length]);
    });

    it("re-reads everything when a notification names nothing (an older runner, a batch touching too much)", async () => {
      const { reads, cache } = await filledCache();

      cache.checkpointsAdvanced(undefined);

      expect(reads.calls.map((call) => call.keyHashes.length)).toEqual([owned.length]);
    });

    it("merges the batches notified during a read into one read, unless a hole lies between them", async () => {
      const { reads, cache } = await filledCache();
      cache.checkpointsAdvanced(batch(1, 2, "a"));
      cache.checkpointsAdvanced(batch(2, 3, "b"));
      cache.checkpointsAdvanced(batch(3, 4, "nobody"));
      reads.calls[0]!.answer(snapshot(2, ...recordsOf("a1", "a2")));
      await settle();
      expect(reads.calls.map((call) => [...call.keyHashes].sort())).toEqual([
        ["a1", "a2"],
        ["b1", "b2"],
      ]);
      reads.calls[1]!.answer(snapshot(4, ...recordsOf("b1", "b2")));
      await settle();
      expect(cache.caughtUpTo).toEqual(at(4));

      cache.checkpointsAdvanced(batch(4, 5, "a"));
      cache.checkpointsAdvanced(batch(5, 6, "a"));
      cache.checkpointsAdvanced(batch(7, 8, "c")); // the batch (6, 7] was not notified
      reads.calls[2]!.answer(snapshot(5, ...recordsOf("a1", "a2")));
      await settle();
      expect(reads.calls[3]!.keyHashes).toHaveLength(owned.length);
    });

    it("drops a key cached during a partial read only if its account was touched and its read is older", async () => {
      const { reads, cache } = await filledCache();
      // Both keys idle-free and unknown to the copy until now.
      cache.checkpointsAdvanced(batch(1, 3, "b"));
      const sameAccount = cache.find("b3"); // read at 2, before the batch's end: may miss its change
      const otherAccount = cache.find("c2"); // read at 2 too, but nothing touched user:c up to 3
      reads.calls[1]!.answer(snapshot(2, record("b3", true, "b")));
      await settle(); // c2 waited for b3's read, and is read next
      reads.calls[2]!.answer(snapshot(2, record("c2", true, "c")));
      await Promise.all([sameAccount, otherAccount]);
      reads.calls[0]!.answer(snapshot(3, ...recordsOf("b1", "b2")));
      await settle();

      expect(cache.caughtUpTo).toEqual(at(3));
      expect(await cache.find("c2")).toEqual(record("c2", true, "c"));
      expect(reads.calls).toHaveLength(3);
      void cache.find("b3");
      expect(reads.calls).toHaveLength(4);
    });

    it("catches up by waiting for the refresh a notification started, not by reading every key", async () => {
      const { reads, cache } = await filledCache();
      cache.checkpointsAdvanced(batch(1, 2, "a"));
      const caughtUp = cache.catchUpTo(at(2));
      reads.calls[0]!.answer(snapshot(2, ...recordsOf("a1", "a2")));
      await caughtUp;

      expect(reads.calls.map((call) => call.keyHashes.length)).toEqual([2]);
    });
  });

  describe("its timer, the safety net for a lost notification", () => {
    afterEach(() => {
      vi.useRealTimers();
    });

    /** A cache holding k1, fresh at position 1, its timer started (fake, so the test moves it by hand). */
    async function cacheOnATimer() {
      const reads = scriptedReads();
      const cache = cacheWith(reads.read);
      await findFirst(cache, reads);
      cache.checkpointsAdvanced();
      reads.calls[1]!.answer(snapshot(1, record("k1")));
      await settle();
      expect(cache.caughtUpTo).toEqual(at(1));
      reads.calls.length = 0;
      vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
      cache.start();
      /** Moves the timer one tick on; the tick reads where the projections are, answered with `position`. */
      const tick = async (position: number) => {
        vi.advanceTimersByTime(60_000);
        reads.calls.at(-1)!.answer(snapshot(position));
        await settle();
      };
      return { reads, cache, tick };
    }

    it("reads only where the projections are while notifications keep the copy fresh, however many keys it holds", async () => {
      const { reads, cache, tick } = await cacheOnATimer();
      await tick(1);
      cache.checkpointsAdvanced({ from: at(1), to: at(4), touched: new Set(["user:someone-else"]) });
      await tick(4);
      await tick(4);
      cache.stop();

      expect(reads.calls.map((call) => call.keyHashes)).toEqual([[], [], []]);
    });

    it("re-reads every key when, a tick later, the copy has not reached where the projections were", async () => {
      const { reads, cache, tick } = await cacheOnATimer();
      await tick(3); // the projections moved to 3, and the notification never came
      vi.advanceTimersByTime(60_000);
      reads.calls.at(-1)!.answer(snapshot(3));
      await settle();
      expect(reads.calls.map((call) => call.keyHashes)).toEqual([[], [], ["k1"]]);
      reads.calls.at(-1)!.answer(snapshot(3, record("k1", false)));
      await settle();
      cache.stop();

      expect(cache.caughtUpTo).toEqual(at(3));
      expect(await cache.find("k1")).toEqual(record("k1", false));
    });
  });
});
