import {
  type AllStreamResolvedEvent,
  BACKWARDS,
  END,
  type AppendResult as EsdbAppendResult,
  type RecordedEvent as EsdbRecordedEvent,
  WrongExpectedVersionError as EsdbWrongExpectedVersionError,
  EventStoreDBClient,
  excludeSystemEvents,
  FORWARDS,
  jsonEvent,
  type ReadStreamOptions,
  START,
  StreamNotFoundError,
} from "@eventstore/db-client";
import { assert } from "../../kernel/assert";
import { KeyedTurns } from "../../kernel/keyed-turns";
import { writtenSchemaVersionOf } from "../events";
import { eventChainHash } from "../integrity/event-hash";
import {
  type AppendResult,
  appendOneByOne,
  type EventStore,
  type ReadAllOptions,
  type RecordedEvent,
  type RecordedEventOf,
  type StreamAppend,
  type SubscribeOptions,
  WrongExpectedVersionError,
} from "./event-store";
import {
  actualVersionOf,
  isLedgerRecord,
  type StreamHead,
  storedAppendOf,
  streamHeadOf,
  toExpectedRevision,
  toLogPosition,
  toReadPosition,
  toRecordedEvent,
  toStreamVersion,
} from "./eventstoredb-mapping";
import { compareLogPositions, type LogPosition } from "./log-position";

/**
 * EventStoreDB event store (selected by EVENTSTORE_URL), through `@eventstore/db-client`. Stream revisions
 * are the store's versions; the global position is the (commit, prepare) pair of the transaction file. The
 * schema version and the chain hash travel in each event's metadata. EventStoreDB has no multi-stream
 * transaction: `appendBatch` appends one by one. Conversions to and from the client are
 * eventstoredb-mapping.ts.
 */
export class EventStoreDbEventStore implements EventStore {
  readonly kind = "eventstoredb";
  private readonly client: EventStoreDBClient;
  private readonly turns = new KeyedTurns();

  constructor(connectionString: string) {
    this.client = EventStoreDBClient.connectionString(connectionString);
  }

  /**
   * The appender computes each event's chain hash (event-hash.ts, as PostgreSQL's trigger does) and keeps
   * it in the event's metadata; the hashed data and metadata texts are JSON.stringify of the event's data
   * and of its ledger metadata (without the store's own fields), which is what the client stores. To
   * chain to the head it read, the append expects that head's revision.
   *
   * Appends to one stream take turns within this process, as PostgreSQL's "any" appends take theirs: raced
   * again and again, writers under "any" lose in lockstep (one wins a round), and the last of 20 would
   * lose more than the retries allow. A conflict with another process is read again and retried.
   *
   * Event ids: the server is idempotent only for a retry sent with the expected revision of the original,
   * and stores a known id again under a revision that matches. So the ids are looked up in the stream
   * itself, as PostgreSQL's unique index does: on every "any" append (the whole stream is read), and
   * whenever the expected version is not the head's.
   */
  async append(append: StreamAppend): Promise<AppendResult> {
    if (append.events.length === 0) throw new RangeError(`append to ${append.streamId} has no events`);
    const expected = expectedVersionOf(append);
    return this.turns.run(append.streamId, async () => {
      let actualVersion = -1;
      for (let attempt = 0; attempt < appendAttemptsMax; attempt++) {
        const place = await this.placeOf(append, expected);
        if ("stored" in place) return place.stored;
        const outcome = await this.appendChained(append, place.head);
        if (!("conflict" in outcome)) return outcome;
        // Read again: the ids may be stored by now, or the head moved past the expectation.
        actualVersion = outcome.conflict ?? place.head.version;
      }
      throw new WrongExpectedVersionError(append.streamId, append.expectedVersion, actualVersion);
    });
  }

  /** The head an append goes after, or its stored result; a head other than the one expected is refused. */
  private async placeOf(
    append: StreamAppend,
    expected: "any" | number,
  ): Promise<{ stored: AppendResult } | { head: StreamHead }> {
    if (expected === "any") {
      const streamEvents = await this.readStreamEvents(append.streamId, wholeStream);
      const stored = storedAppendOf(append, streamEvents);
      return stored ? { stored } : { head: streamHeadOf(streamEvents.at(-1)) };
    }
    const head = streamHeadOf((await this.readStreamEvents(append.streamId, lastEvent))[0]);
    if (head.version === expected) return { head };
    const stored = storedAppendOf(append, await this.readStreamEvents(append.streamId, wholeStream));
    if (stored) return { stored };
    throw new WrongExpectedVersionError(append.streamId, append.expectedVersion, head.version);
  }

  private async appendChained(
    append: StreamAppend,
    head: StreamHead,
  ): Promise<AppendResult | { conflict: number | undefined }> {
    let previousHash = head.chainHash;
    const events = append.events.map(({ eventId, event }, index) => {
      const schemaVersion = writtenSchemaVersionOf(event);
      const chainHash = eventChainHash(previousHash, {
        streamId: append.streamId,
        streamVersion: head.version + 1 + index,
        eventId,
        type: event.type,
        schemaVersion,
        dataText: JSON.stringify(event.data),
        metadataText: JSON.stringify(event.metadata),
      });
      previousHash = chainHash;
      return jsonEvent({
        id: eventId,
        type: event.type,
        data: event.data as Record<string, unknown>,
        metadata: { ...event.metadata, schemaVersion, chainHash: chainHash.toString("hex") },
      });
    });
    let result: EsdbAppendResult;
    try {
      result = await this.client.appendToStream(append.streamId, events, {
        expectedRevision: toExpectedRevision(head.version),
      });
    } catch (error) {
      if (error instanceof EsdbWrongExpectedVersionError) return { conflict: actualVersionOf(error) };
      throw error;
    }
    // With `throwOnAppendFailure=false` in the connection string the client resolves a conflict instead
    // of throwing it; its batch append then reports the stream's revision wrongly (as 1), so take none.
    if (!result.success) return { conflict: undefined };
    return {
      streamId: append.streamId,
      streamVersion: toStreamVersion(result.nextExpectedRevision),
      position: toLogPosition(result.position, `the append to ${append.streamId}`),
    };
  }

  /** The stream's events as the client gives them; none for a stream that does not exist. */
  private async readStreamEvents(streamId: string, options: ReadStreamOptions): Promise<EsdbRecordedEvent[]> {
    const events: EsdbRecordedEvent[] = [];
    try {
      for await (const resolved of this.client.readStream(streamId, options)) {
        if (resolved.event) events.push(resolved.event);
      }
    } catch (error) {
      if (error instanceof StreamNotFoundError) return [];
      throw error;
    }
    return events;
  }

  async appendBatch(appends: readonly StreamAppend[]): Promise<PromiseSettledResult<AppendResult>[]> {
    return appendOneByOne(this, appends);
  }

  async readStream(streamId: string): Promise<RecordedEvent[]> {
    return (await this.readStreamEvents(streamId, wholeStream)).map(toRecordedEvent);
  }

  /** Backwards from the stream's end, a page at a time, until an event of the type (or the stream's start). */
  async readLastEvent<T extends RecordedEvent["type"] = RecordedEvent["type"]>(
    streamId: string,
    type?: T,
  ): Promise<RecordedEventOf<T> | undefined> {
    let fromRevision: ReadStreamOptions["fromRevision"] = END;
    for (;;) {
      const page = await this.readStreamEvents(streamId, {
        direction: BACKWARDS,
        fromRevision,
        maxCount: type === undefined ? 1 : streamPageEvents,
      });
      const found = page.find((event) => type === undefined || event.type === type);
      if (found) return toRecordedEvent(found) as RecordedEventOf<T>;
      const earliest = page.at(-1);
      if (page.length < streamPageEvents || earliest === undefined || earliest.revision === 0n)
        return undefined;
      fromRevision = earliest.revision - 1n;
    }
  }

  async readStreams(streamIds: readonly string[]): Promise<Map<string, RecordedEvent[]>> {
    const read = await Promise.all(
      [...new Set(streamIds)].map(async (streamId) => [streamId, await this.readStream(streamId)] as const),
    );
    return new Map(read);
  }

  /**
   * The client (6.x) reads $all without a server-side filter, so a page of the server's own events and
   * other applications' would come back empty, which every reader takes for the end of the log. So it
   * reads on, page after page, until it has `limit` ledger events or the log ends (a page shorter than
   * asked for); each page starts at the last record of the one before.
   */
  async readAll(options: ReadAllOptions): Promise<RecordedEvent[]> {
    assert(Number.isSafeInteger(options.limit) && options.limit > 0, "readAll reads at least one event");
    const pageEvents = Math.max(options.limit + 1, allPageEventsMin);
    const events: RecordedEvent[] = [];
    let cursor = options.after;
    for (;;) {
      const page = this.client.readAll({
        direction: FORWARDS,
        fromPosition: toReadPosition(cursor),
        maxCount: pageEvents,
      });
      const read = await collectLedgerEvents(page, cursor, events, options.limit);
      if (events.length === options.limit || read.records < pageEvents) return events;
      assert(
        read.last !== undefined && (cursor === undefined || compareLogPositions(read.last, cursor) > 0),
        "a full page of $all ends past where it started",
      );
      cursor = read.last;
    }
  }

  async subscribe(options: SubscribeOptions): Promise<void> {
    if (options.signal.aborted) return;
    const subscription = this.client.subscribeToAll({
      fromPosition: toReadPosition(options.after),
      filter: excludeSystemEvents(),
    });
    const stop = () => void subscription.unsubscribe();
    options.signal.addEventListener("abort", stop, { once: true });
    try {
      for await (const resolved of subscription) {
        if (options.signal.aborted) break;
        const event = resolved.event;
        if (!event || !isLedgerRecord(event)) continue;
        const recorded = toRecordedEvent(event);
        if (options.after && compareLogPositions(recorded.position, options.after) <= 0) continue;
        await options.handle([recorded]);
      }
    } finally {
      options.signal.removeEventListener("abort", stop);
      await subscription.unsubscribe().catch(() => {});
    }
  }

  async close(): Promise<void> {
    await this.client.dispose();
  }
}

/** Attempts of one append that lost to another process's append of the same stream. */
const appendAttemptsMax = 10;
/** A page of $all holds at least this many records, ledger events or not. */
const allPageEventsMin = 100;
/** Events a backwards read of a stream asks for at a time, looking for an event of a type. */
const streamPageEvents = 100;
const wholeStream: ReadStreamOptions = { direction: FORWARDS, fromRevision: START };
const lastEvent: ReadStreamOptions = { direction: BACKWARDS, fromRevision: END, maxCount: 1 };

function expectedVersionOf(append: StreamAppend): "any" | number {
  const expected = append.expectedVersion;
  if (expected === "any") return "any";
  if (expected === "no-stream") return -1;
  if (!Number.isSafeInteger(expected) || expected < 0)
    throw new RangeError(`bad expected version ${expected}`);
  return expected;
}

interface AllPage extends AsyncIterable<AllStreamResolvedEvent> {
  cancel(): Promise<void>;
}

/**
 * Adds a page's ledger events after `after` to `events`, up to `limit`; says how many records the page
 * held and where its last one was. A page left early is cancelled, so its call does not stay open.
 */
async function collectLedgerEvents(
  page: AllPage,
  after: LogPosition | undefined,
  events: RecordedEvent[],
  limit: number,
): Promise<{ records: number; last: LogPosition | undefined }> {
  let records = 0;
  let last: LogPosition | undefined;
  for await (const resolved of page) {
    records++;
    const event = resolved.event;
    if (!event) continue;
    last = toLogPosition(event.position, `event ${event.id} of ${event.streamId}`);
    if ((after && compareLogPositions(last, after) <= 0) || !isLedgerRecord(event)) continue;
    events.push(toRecordedEvent(event));
    if (events.length === limit) {
      await page.cancel();
      break;
    }
  }
  return { records, last };
}
