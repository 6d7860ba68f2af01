import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type EventStore,
  IdempotencyConflictError,
  type RecordedEvent,
  WrongExpectedVersionError,
} from "../../../src/ledger/store/event-store";
import { compareLogPositions, logStart } from "../../../src/ledger/store/log-position";
import { keyLimitsSet, topUp } from "../../support/ledger-fixtures";

export interface StoreUnderTest {
  store: EventStore;
  dispose(): Promise<void>;
}

/** The behaviour every event store must have; run against each store that is reachable. */
export function describeEventStoreContract(name: string, open: () => Promise<StoreUnderTest>): void {
  describe(`event store contract: ${name}`, () => {
    let subject: StoreUnderTest;
    let store: EventStore;
    const stream = (label: string) => `account-${label}_${randomUUID().slice(0, 8)}`;

    beforeAll(async () => {
      subject = await open();
      store = subject.store;
    });
    afterAll(async () => {
      await subject?.dispose();
    });

    it("appends to a new stream and reads it back in version order", async () => {
      const streamId = stream("read");
      const first = await store.append({
        streamId,
        expectedVersion: "no-stream",
        events: [topUp("u1", "10", "a")],
      });
      const second = await store.append({
        streamId,
        expectedVersion: 0,
        events: [topUp("u1", "20", "b"), topUp("u1", "30", "c")],
      });

      expect(first.streamVersion).toBe(0);
      expect(second.streamVersion).toBe(2);
      expect(compareLogPositions(second.position, first.position)).toBe(1);
      const events = await store.readStream(streamId);
      expect(
        events.map((event) => [
          event.streamVersion,
          event.type,
          (event.data as { reference: string }).reference,
        ]),
      ).toEqual([
        [0, "CreditToppedUp", "a"],
        [1, "CreditToppedUp", "b"],
        [2, "CreditToppedUp", "c"],
      ]);
      expect(events[2]!.position).toEqual(second.position);
    });

    it("reads several streams in one call, each in version order, missing ones as empty", async () => {
      const [first, second, missing] = [stream("many-a"), stream("many-b"), stream("many-missing")];
      await store.append({
        streamId: first,
        expectedVersion: "no-stream",
        events: [topUp("u1", "1", "a0"), topUp("u1", "2", "a1")],
      });
      await store.append({
        streamId: second,
        expectedVersion: "no-stream",
        events: [topUp("u2", "3", "b0")],
      });

      // A repeated id reads its stream once.
      const streams = await store.readStreams([second, missing, first, second]);

      const references = (streamId: string) =>
        streams.get(streamId)!.map((event) => (event.data as { reference: string }).reference);
      expect([...streams.keys()].sort()).toEqual([first, missing, second].sort());
      expect(references(first)).toEqual(["a0", "a1"]);
      expect(references(second)).toEqual(["b0"]);
      expect(streams.get(missing)).toEqual([]);
    });

    it("reads a stream that does not exist as empty", async () => {
      expect(await store.readStream(stream("missing"))).toEqual([]);
    });

    it("reads a stream's last event, and its last of a type however far back it lies, as readStream has them", async () => {
      const streamId = stream("last");
      const limits = keyLimitsSet(
        randomUUID(),
        { kind: "user", id: "u1" },
        { rateLimitRequestsPerMinute: 5 },
      );
      // More top-ups after the limits than a page of a backwards read holds.
      const topUps = Array.from({ length: 250 }, (_, index) => topUp("u1", "1", `t${index}`));
      await store.append({ streamId, expectedVersion: "no-stream", events: [...limits.events, ...topUps] });
      const whole = await store.readStream(streamId);

      expect(await store.readLastEvent(streamId)).toEqual(whole.at(-1));
      expect(await store.readLastEvent(streamId, "CreditToppedUp")).toEqual(whole.at(-1));
      expect(await store.readLastEvent(streamId, "ApiKeyLimitsSet")).toEqual(whole[0]);
      expect(await store.readLastEvent(streamId, "UsageCharged")).toBeUndefined();
      expect(await store.readLastEvent(stream("last-missing"))).toBeUndefined();
      expect(await store.readLastEvent(stream("last-missing"), "CreditToppedUp")).toBeUndefined();
    });

    it("refuses an append whose expected version is wrong, and writes nothing", async () => {
      const streamId = stream("conflict");
      await store.append({ streamId, expectedVersion: "no-stream", events: [topUp("u1", "1", "first")] });

      await expect(
        store.append({ streamId, expectedVersion: "no-stream", events: [topUp("u1", "1", "again")] }),
      ).rejects.toMatchObject({ name: "WrongExpectedVersionError", actualVersion: 0 });
      const stale = store.append({ streamId, expectedVersion: 3, events: [topUp("u1", "1", "stale")] });
      await expect(stale).rejects.toBeInstanceOf(WrongExpectedVersionError);
      await expect(
        store.append({ streamId: stream("absent"), expectedVersion: 0, events: [topUp("u1", "1", "x")] }),
      ).rejects.toMatchObject({ actualVersion: -1 });
      expect(await store.readStream(streamId)).toHaveLength(1);
    });

    it("treats a retry of the same event ids as the same append", async () => {
      const streamId = stream("idempotent");
      const events = [topUp("u1", "5", "once"), topUp("u1", "6", "twice")];
      const first = await store.append({ streamId, expectedVersion: "no-stream", events });
      const retry = await store.append({ streamId, expectedVersion: "no-stream", events });

      expect(retry).toEqual(first);
      expect(await store.readStream(streamId)).toHaveLength(2);
    });

    it("refuses a retry that reuses only some of the stored event ids", async () => {
      const streamId = stream("partial");
      const stored = topUp("u1", "5", "stored");
      await store.append({ streamId, expectedVersion: "no-stream", events: [stored] });

      await expect(
        store.append({ streamId, expectedVersion: "no-stream", events: [stored, topUp("u1", "1", "new")] }),
      ).rejects.toBeInstanceOf(IdempotencyConflictError);
    });

    it("treats a retry with expected version any of the same event ids as the same append", async () => {
      const streamId = stream("idempotent-any");
      const events = [topUp("u1", "5", "once"), topUp("u1", "6", "twice")];
      const first = await store.append({ streamId, expectedVersion: "any", events });
      await store.append({ streamId, expectedVersion: "any", events: [topUp("u1", "7", "later")] });

      const retry = await store.append({ streamId, expectedVersion: "any", events });

      expect(retry).toEqual(first);
      expect((await store.readStream(streamId)).map((event) => event.streamVersion)).toEqual([0, 1, 2]);
      await expect(
        store.append({ streamId, expectedVersion: "any", events: [events[0]!, topUp("u1", "1", "new")] }),
      ).rejects.toBeInstanceOf(IdempotencyConflictError);
    });

    it("lets concurrent writers with expected version any all land, with contiguous versions", async () => {
      const streamId = stream("any");
      await Promise.all(
        Array.from({ length: 20 }, (_, index) =>
          store.append({ streamId, expectedVersion: "any", events: [topUp("u1", "1", `w${index}`)] }),
        ),
      );
      const events = await store.readStream(streamId);
      expect(events.map((event) => event.streamVersion)).toEqual(
        Array.from({ length: 20 }, (_, index) => index),
      );
    });

    it("reports each outcome of a batch, storing the appends that were valid", async () => {
      const taken = stream("taken");
      await store.append({ streamId: taken, expectedVersion: "no-stream", events: [topUp("u1", "1", "t")] });
      const fresh = stream("fresh");

      const outcomes = await store.appendBatch([
        { streamId: fresh, expectedVersion: "no-stream", events: [topUp("u1", "2", "f")] },
        { streamId: taken, expectedVersion: "no-stream", events: [topUp("u1", "3", "t2")] },
      ]);

      expect(outcomes[0]).toMatchObject({
        status: "fulfilled",
        value: { streamId: fresh, streamVersion: 0 },
      });
      expect(outcomes[1]).toMatchObject({
        status: "rejected",
        reason: { name: "WrongExpectedVersionError" },
      });
      expect(await store.readStream(fresh)).toHaveLength(1);
      expect(await store.readStream(taken)).toHaveLength(1);
    });

    it("pages through the whole log in order with readAll", async () => {
      const streamId = stream("paging");
      const events = Array.from({ length: 7 }, (_, index) => topUp("u1", "1", `p${index}`));
      const appendedLastId = events[6]!.eventId;
      const appended = await store.append({ streamId, expectedVersion: "no-stream", events });
      const seen: RecordedEvent[] = [];
      let after: RecordedEvent["position"] | undefined;
      // Keep paging until the append is visible: on a shared server an unrelated open transaction may hold
      // it back for a moment, never skip it.
      for (let page = 0; page < 100_000 && !seen.some((event) => event.eventId === appendedLastId); page++) {
        const events = await store.readAll({ limit: 3, ...(after ? { after } : {}) });
        if (events.length === 0) await new Promise((resolve) => setTimeout(resolve, 10));
        seen.push(...events);
        if (events.length > 0) after = events[events.length - 1]!.position;
      }
      for (let index = 1; index < seen.length; index++) {
        expect(compareLogPositions(seen[index - 1]!.position, seen[index]!.position)).toBe(-1);
      }
      const mine = seen.filter((event) => event.streamId === streamId);
      expect(mine.map((event) => event.streamVersion)).toEqual([0, 1, 2, 3, 4, 5, 6]);
      expect(mine.at(-1)!.position).toEqual(appended.position);
    });

    it("reads and follows the log from its start given as logStart, as rebuilds and projections pass it", async () => {
      await store.append({
        streamId: stream("start"),
        expectedVersion: "no-stream",
        events: [topUp("u1", "1", "s")],
      });

      // A page of one: the log's first event, past whatever the server holds of its own.
      const [first] = await store.readAll({ after: logStart, limit: 1 });
      expect(first).toBeDefined();
      expect(await store.readAll({ limit: 1 })).toEqual([first]);
      const controller = new AbortController();
      const received: RecordedEvent[] = [];
      await store.subscribe({
        after: logStart,
        batchSizeMax: 1,
        signal: controller.signal,
        handle: async (events) => {
          received.push(...events);
          controller.abort();
        },
      });
      expect(received[0]).toEqual(first);
    });

    it("delivers 16 concurrent writers × 1,000 events to a subscriber exactly once, in a stable order", async () => {
      const writers = 16;
      const eventsPerWriter = 1_000;
      const runId = randomUUID().slice(0, 8);
      const start = (await readToEnd(store)).at(-1)?.position;
      const received: RecordedEvent[] = [];
      const controller = new AbortController();
      const expectedTotal = writers * eventsPerWriter;
      let resolveAll = () => {};
      const allReceived = new Promise<void>((resolve) => {
        resolveAll = resolve;
      });
      const subscription = store.subscribe({
        ...(start ? { after: start } : {}),
        batchSizeMax: 500,
        signal: controller.signal,
        handle: async (events) => {
          received.push(...events.filter((event) => event.streamId.includes(runId)));
          if (received.length >= expectedTotal) resolveAll();
        },
      });

      await Promise.all(
        Array.from({ length: writers }, async (_, writer) => {
          const streamId = `account-w${writer}_${runId}`;
          for (let index = 0; index < eventsPerWriter; index++) {
            await store.append({
              streamId,
              expectedVersion: index === 0 ? "no-stream" : index - 1,
              events: [topUp(`w${writer}`, "1", String(index))],
            });
          }
        }),
      );
      await allReceived;
      controller.abort();
      await subscription;

      expect(received).toHaveLength(expectedTotal);
      expect(new Set(received.map((event) => event.eventId)).size).toBe(expectedTotal);
      for (let writer = 0; writer < writers; writer++) {
        const versions = received.filter((event) => event.streamId === `account-w${writer}_${runId}`);
        expect(versions.map((event) => event.streamVersion)).toEqual([...Array(eventsPerWriter).keys()]);
      }
      const replay = (await readToEnd(store, start)).filter((event) => event.streamId.includes(runId));
      expect(replay.map((event) => event.eventId)).toEqual(received.map((event) => event.eventId));
    }, 120_000);
  });
}

async function readToEnd(store: EventStore, after?: RecordedEvent["position"]): Promise<RecordedEvent[]> {
  const all: RecordedEvent[] = [];
  let cursor = after;
  for (let page = 0; page < 100_000; page++) {
    const events = await store.readAll({ limit: 5_000, ...(cursor ? { after: cursor } : {}) });
    if (events.length === 0) return all;
    all.push(...events);
    cursor = events[events.length - 1]!.position;
  }
  throw new Error("log did not end");
}
