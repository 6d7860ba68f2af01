import { randomUUID } from "node:crypto";
import { createServer } from "node:net";
import { EventStoreDBClient, FORWARDS, START, UnavailableError } from "@eventstore/db-client";
import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { eventChainHash, genesisHash } from "../../../src/ledger/integrity/event-hash";
import { type RecordedEvent, WrongExpectedVersionError } from "../../../src/ledger/store/event-store";
import { EventStoreDbEventStore } from "../../../src/ledger/store/eventstoredb-event-store";
import { logStart } from "../../../src/ledger/store/log-position";
import { FakeEventStoreDb, type FakeEventStoreDbOptions } from "../../support/fake-eventstoredb";
import { metadata, topUp } from "../../support/ledger-fixtures";
import { describeEventStoreContract } from "./event-store-contract";

/**
 * The EventStoreDB store twice: against a server, where EVENTSTORE_URL names one (docs/operations.md,
 * "EventStoreDB"; skipped, and reported so, elsewhere), and against FakeEventStoreDb, an in-memory model
 * of the server behind the real client's calls. The fake runs everywhere; what it models of the server
 * is written in its header, and only a server run shows the model right.
 */

const eventStoreUrl = process.env.EVENTSTORE_URL;

/** The hash chain an appender wrote, read back through the client and recomputed from the stored texts. */
function describeHashChain(
  name: string,
  open: () => Promise<{ store: EventStoreDbEventStore; url: string; dispose(): Promise<void> }>,
) {
  describe(`EventStoreDB hash chain: ${name}`, () => {
    it("chains each event to its stream's previous one, as PostgreSQL does", async () => {
      const { store, url, dispose } = await open();
      const client = EventStoreDBClient.connectionString(url);
      try {
        const streamId = `account-user-chain-${randomUUID()}`;
        await store.append({
          streamId,
          expectedVersion: "no-stream",
          events: [topUp("c", "1", "a"), topUp("c", "2", "b")],
        });
        await store.append({ streamId, expectedVersion: "any", events: [topUp("c", "3", "c")] });
        let previous = genesisHash;
        let count = 0;
        for await (const resolved of client.readStream(streamId, {
          direction: FORWARDS,
          fromRevision: START,
        })) {
          const event = resolved.event!;
          const { schemaVersion, chainHash, ...ledgerMetadata } = event.metadata as Record<string, unknown>;
          const expected = eventChainHash(previous, {
            streamId,
            streamVersion: Number(event.revision),
            eventId: event.id,
            type: event.type,
            schemaVersion: schemaVersion as number,
            dataText: JSON.stringify(event.data),
            metadataText: JSON.stringify(ledgerMetadata),
          });
          expect(chainHash).toBe(expected.toString("hex"));
          previous = expected;
          count++;
        }
        expect(count).toBe(3);
      } finally {
        await client.dispose();
        await dispose();
      }
    });
  });
}

if (eventStoreUrl) {
  describeEventStoreContract("EventStoreDB", async () => {
    const store = new EventStoreDbEventStore(eventStoreUrl);
    return { store, dispose: () => store.close() };
  });
  describeHashChain("server", async () => {
    const store = new EventStoreDbEventStore(eventStoreUrl);
    return { store, url: eventStoreUrl, dispose: () => store.close() };
  });
} else {
  describe("event store contract: EventStoreDB", () => {
    it.skip("runs when EVENTSTORE_URL points at a server (none is configured)", () => {});
  });
}

const fakeUrl = "esdb://eventstoredb.invalid:2113?tls=false";

/** A store whose client is answered by a fake of its own; the spies go when the store is disposed. */
function openOnFake(options: FakeEventStoreDbOptions = {}) {
  const fake = new FakeEventStoreDb({ firstPosition: 2n ** 60n, linksPerEvent: 2, ...options });
  const restore = fake.install();
  const store = new EventStoreDbEventStore(fakeUrl);
  return {
    fake,
    store,
    url: fakeUrl,
    dispose: async () => {
      await store.close();
      restore();
    },
  };
}

describeEventStoreContract("EventStoreDB, on a fake of its server", async () => openOnFake());
describeHashChain("on a fake of its server", async () => openOnFake());

describe("EventStoreDB store, on a fake of its server", () => {
  let opened: ReturnType<typeof openOnFake> | undefined;
  const open = (options: FakeEventStoreDbOptions = {}) => {
    opened = openOnFake(options);
    return opened;
  };
  afterEach(async () => {
    await opened?.dispose();
    opened = undefined;
  });
  const account = (label: string) => `account-${label}_${randomUUID().slice(0, 8)}`;
  /** An event as this store in another process writes it (its chain hash aside). */
  const anotherProcessEvent = () => ({
    ...topUp("u2", "9", "other").event,
    metadata: { ...metadata(), schemaVersion: 1 },
  });

  it("asks for the log from START given logStart, which the client cannot send as a position", async () => {
    const { fake, store } = open();
    const streamId = account("start");
    await store.append({ streamId, expectedVersion: "no-stream", events: [topUp("u1", "1", "a")] });

    const events = await store.readAll({ after: logStart, limit: 10 });
    const controller = new AbortController();
    await store.subscribe({
      after: logStart,
      batchSizeMax: 1,
      signal: controller.signal,
      handle: async () => controller.abort(),
    });

    expect(events.map((event) => event.streamId)).toEqual([streamId]);
    expect(fake.readAllCalls.map((call) => call.fromPosition)).toEqual([START]);
    expect(fake.subscribeCalls.map((call) => call.fromPosition)).toEqual([START]);
  });

  it("pages past the server's own records and other applications' events to fill a page", async () => {
    const { fake, store } = open();
    const first = account("first");
    const second = account("second");
    await store.append({ streamId: first, expectedVersion: "no-stream", events: [topUp("u1", "1", "a")] });
    for (let index = 0; index < 250; index++) fake.writeServerRecord();
    fake.writeForeignEvent("order-42", "OrderPlaced");
    await store.append({
      streamId: second,
      expectedVersion: "no-stream",
      events: [topUp("u1", "2", "b"), topUp("u1", "3", "c")],
    });

    const [only] = await store.readAll({ limit: 1 });
    const two = await store.readAll({ after: only!.position, limit: 2 });
    const rest = await store.readAll({ after: two[1]!.position, limit: 2 });

    expect(only!.streamId).toBe(first);
    expect(two.map((event) => [event.streamId, event.streamVersion])).toEqual([
      [second, 0],
      [second, 1],
    ]);
    expect(rest).toEqual([]);
  });

  it("refuses to read on past an event it wrote of a type this release does not know, where it passed over it", async () => {
    const { fake, store } = open();
    const streamId = account("later");
    await store.append({ streamId, expectedVersion: "no-stream", events: [topUp("u1", "1", "a")] });
    // As a later release's store writes an event type it added: its metadata carries the store's fields.
    fake.writeAsAnotherClient(streamId, {
      type: "CreditRefunded",
      data: { account: { kind: "user", id: "u1" }, amountWon: "1" },
      metadata: { ...metadata(), schemaVersion: 1, chainHash: "ab".repeat(32) },
    });
    const controller = new AbortController();

    await expect(store.readAll({ limit: 10 })).rejects.toThrow(
      /CreditRefunded .* cannot be read by this release/,
    );
    await expect(
      store.subscribe({ batchSizeMax: 10, signal: controller.signal, handle: async () => {} }),
    ).rejects.toThrow(/CreditRefunded .* cannot be read by this release/);
  });

  it("keeps positions above 2^53 exact, and refuses a revision a number cannot hold", async () => {
    const { fake, store } = open({ firstPosition: 2n ** 62n + 7n });
    const streamId = account("big");
    const appended = await store.append({
      streamId,
      expectedVersion: "no-stream",
      events: [topUp("u1", "1", "a")],
    });
    const stored = fake.streamRecords(streamId)[0]!;
    expect(appended.position).toEqual(stored.position);
    expect((await store.readStream(streamId))[0]!.position).toEqual(stored.position);

    const long = account("long");
    fake.writeAtRevision(long, 2n ** 53n + 1n, anotherProcessEvent());
    await expect(store.readStream(long)).rejects.toThrow(RangeError);
  });

  it("refuses a stream read without log positions (a server before 22.6) rather than pass ulong.MaxValue on", async () => {
    const { store } = open({ streamReadPositions: "unknown" });
    const streamId = account("old-server");
    await store.append({ streamId, expectedVersion: "no-stream", events: [topUp("u1", "1", "a")] });

    await expect(store.readStream(streamId)).rejects.toThrow(/22\.6/);
  });

  it("maps the client's WrongExpectedVersionError, thrown when another client appended first", async () => {
    const { fake, store } = open();
    const streamId = account("raced");
    fake.beforeAppend = (streamName) => {
      fake.writeAsAnotherClient(streamName, anotherProcessEvent());
      fake.beforeAppend = undefined;
    };

    const raced = store.append({
      streamId,
      expectedVersion: "no-stream",
      events: [topUp("u1", "1", "mine")],
    });

    await expect(raced).rejects.toBeInstanceOf(WrongExpectedVersionError);
    await expect(raced).rejects.toMatchObject({ expectedVersion: "no-stream", actualVersion: 0 });
    expect(await store.readStream(streamId)).toHaveLength(1);
  });

  it("gives up on an append with expected version any that another client keeps beating, with the version it reported", async () => {
    const { fake, store } = open();
    const streamId = account("beaten");
    fake.beforeAppend = (streamName) => fake.writeAsAnotherClient(streamName, anotherProcessEvent());

    const beaten = await store
      .append({ streamId, expectedVersion: "any", events: [topUp("u1", "1", "mine")] })
      .catch((error: unknown) => error);

    // The version the client's last conflict reported: the other client's last event.
    expect(beaten).toBeInstanceOf(WrongExpectedVersionError);
    expect(beaten).toMatchObject({ actualVersion: fake.streamRecords(streamId).length - 1 });
    expect(fake.appendCalls.length).toBeLessThanOrEqual(11);
  });

  it("takes a conflict resolved as success false (throwOnAppendFailure=false) for a conflict", async () => {
    const { fake, store } = open({ resolveConflicts: true });
    const streamId = account("quiet");
    fake.beforeAppend = (streamName) => {
      fake.writeAsAnotherClient(streamName, anotherProcessEvent());
      fake.beforeAppend = undefined;
    };

    const raced = store.append({
      streamId,
      expectedVersion: "no-stream",
      events: [topUp("u1", "1", "mine")],
    });

    await expect(raced).rejects.toMatchObject({ name: "WrongExpectedVersionError", actualVersion: 0 });
  });

  it("knows its stored event ids in the lower case the server writes them in", async () => {
    const { store } = open();
    const streamId = account("case");
    const event = topUp("u1", "1", "a", randomUUID().toUpperCase() as ReturnType<typeof randomUUID>);
    const first = await store.append({ streamId, expectedVersion: "no-stream", events: [event] });

    expect(await store.append({ streamId, expectedVersion: "no-stream", events: [event] })).toEqual(first);
    expect(await store.readStream(streamId)).toHaveLength(1);
  });

  it("refuses an append of no events, as PostgreSQL does", async () => {
    const { fake, store } = open();
    await expect(
      store.append({ streamId: account("empty"), expectedVersion: "any", events: [] }),
    ).rejects.toThrow(RangeError);
    expect(fake.appendCalls).toEqual([]);
  });

  it("reads a stream named twice in one readStreams once", async () => {
    const { fake, store } = open();
    const streamId = account("twice");
    await store.append({ streamId, expectedVersion: "no-stream", events: [topUp("u1", "1", "a")] });
    const reads = fake.readStreamCalls.length;

    const streams = await store.readStreams([streamId, streamId]);

    expect(streams.get(streamId)).toHaveLength(1);
    expect(fake.readStreamCalls.length - reads).toBe(1);
  });

  it("returns from a subscription whose signal has aborted before it began, without subscribing", async () => {
    const { fake, store } = open();
    const controller = new AbortController();
    controller.abort();
    const received: RecordedEvent[] = [];

    await store.subscribe({
      batchSizeMax: 10,
      signal: controller.signal,
      handle: async (events) => void received.push(...events),
    });

    expect(fake.subscribeCalls).toEqual([]);
    expect(received).toEqual([]);
  });
});

describe("EventStoreDB store, with the real client and nothing listening", () => {
  let url: string;
  let store: EventStoreDbEventStore;
  beforeAll(async () => {
    // A port just closed: the client's connection is refused at once.
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as { port: number };
    await new Promise((resolve) => server.close(resolve));
    url = `esdb://127.0.0.1:${port}?tls=false`;
  });
  beforeEach(() => {
    store = new EventStoreDbEventStore(url);
  });
  afterEach(() => store.close());

  it("reads from logStart with a request the client can send: only the connection fails", async () => {
    await expect(store.readAll({ after: logStart, limit: 1 })).rejects.toBeInstanceOf(UnavailableError);
  });

  it("passes the client's other errors on as they are", async () => {
    const outcome = store.append({
      streamId: "account-x",
      expectedVersion: "any",
      events: [topUp("u1", "1", "a")],
    });
    await expect(outcome).rejects.toBeInstanceOf(UnavailableError);
  });
});
