import { Readable } from "node:stream";
import {
  type AllStreamResolvedEvent,
  type AllStreamSubscription,
  ANY,
  type AppendExpectedRevision,
  type AppendResult,
  type AppendToStreamOptions,
  BACKWARDS,
  END,
  EVENT_TYPE,
  type EventData,
  EventStoreDBClient,
  FORWARDS,
  NO_STREAM,
  type Position,
  type ReadAllOptions,
  type ReadStreamOptions,
  type RecordedEvent,
  type ResolvedEvent,
  START,
  STREAM_EXISTS,
  StreamNotFoundError,
  type SubscribeToAllOptions,
  UnknownError,
  WrongExpectedVersionError,
} from "@eventstore/db-client";
import { vi } from "vitest";

/**
 * An EventStoreDB server in memory, answering `@eventstore/db-client`'s calls (appendToStream, readStream,
 * readAll, subscribeToAll) with what the client itself returns or throws: its recorded events
 * (data and metadata parsed from the stored JSON, ids in lower case), its StreamNotFoundError and
 * WrongExpectedVersionError. `install` answers every client of the test file this way; no network.
 *
 * The server's behaviour as modelled here, and as a real server checks it (EVENTSTORE_URL):
 * - a specific expected revision must equal the stream's last; the same ids sent again right after the
 *   expected revision are an idempotent success; a known id under a matching revision is written again;
 *   under ANY nothing is deduplicated (the server's cache is best effort);
 * - $all holds the server's own records: a fresh log starts with some, and with the system projections
 *   running (`linksPerEvent`), each event is followed by link events (`$>`) in `$ce-…` and `$et-…`;
 * - a read of $all from a position includes the record there; a subscription from a position starts after it;
 * - an append is answered after a turn of the event loop, so concurrent appends interleave as on the wire;
 * - a position with a negative part cannot be sent: the client's request fails to serialise (UnknownError).
 */

interface StoredRecord {
  streamId: string;
  id: string;
  revision: bigint;
  type: string;
  isJson: boolean;
  created: Date;
  dataText: string;
  metadataText: string | undefined;
  position: Position;
}

export interface FakeEventStoreDbOptions {
  /** The position of the log's first record: positions above 2^53 show every conversion is exact. */
  firstPosition?: bigint;
  /** Link events written after each event, as the system projections $by_category and $by_event_type do. */
  linksPerEvent?: 0 | 1 | 2;
  /** As `throwOnAppendFailure=false` in the connection string: a conflict resolves with success false. */
  resolveConflicts?: boolean;
  /** Servers before 22.6 give ulong.MaxValue as the position of an event read from a stream. */
  streamReadPositions?: "known" | "unknown";
}

const unknownPositionPart = 2n ** 64n - 1n;

export class FakeEventStoreDb {
  readonly log: StoredRecord[] = [];
  readonly appendCalls: { streamName: string; expectedRevision: AppendExpectedRevision }[] = [];
  readonly readStreamCalls: { streamName: string; options: ReadStreamOptions }[] = [];
  readonly readAllCalls: ReadAllOptions[] = [];
  readonly subscribeCalls: SubscribeToAllOptions[] = [];
  /** Runs as an append arrives, before it is applied: another client's write that gets there first. */
  beforeAppend: ((streamName: string) => void) | undefined;
  private readonly streams = new Map<string, StoredRecord[]>();
  private readonly subscribers = new Set<(record: StoredRecord) => void>();
  private nextPosition: bigint;

  constructor(private readonly options: FakeEventStoreDbOptions = {}) {
    this.nextPosition = options.firstPosition ?? 0n;
    // What a fresh server writes before any client does.
    for (const streamId of ["$$$scavenges", "$$$stats-127.0.0.1:2113", "$$$settings"]) {
      this.write(streamId, { type: "$metadata", isJson: true, id: crypto.randomUUID(), text: "{}" });
    }
  }

  /** A record the server writes for itself (stats, scavenges), between the clients' events. */
  writeServerRecord(streamId = "$stats-127.0.0.1:2113", type = "$statsCollected"): void {
    this.write(streamId, { type, isJson: true, id: crypto.randomUUID(), text: "{}" });
  }

  /** A JSON event of another application sharing the server, of a type the ledger does not know. */
  writeForeignEvent(streamId: string, type: string): void {
    this.write(streamId, { type, isJson: true, id: crypto.randomUUID(), text: '{"foreign":true}' });
  }

  /** Answers every EventStoreDBClient's calls from this fake until the returned function is called. */
  install(): () => void {
    const prototype = EventStoreDBClient.prototype;
    const spies = [
      vi
        .spyOn(prototype, "appendToStream")
        .mockImplementation(((
          streamName: string,
          events: EventData | EventData[],
          options?: AppendToStreamOptions,
        ) => this.appendToStream(streamName, events, options)) as never),
      vi
        .spyOn(prototype, "readStream")
        .mockImplementation(((streamName: string, options?: ReadStreamOptions) =>
          this.readStream(streamName, options)) as never),
      vi
        .spyOn(prototype, "readAll")
        .mockImplementation(((options?: ReadAllOptions) => this.readAll(options)) as never),
      vi
        .spyOn(prototype, "subscribeToAll")
        .mockImplementation(((options?: SubscribeToAllOptions) => this.subscribeToAll(options)) as never),
    ];
    return () => {
      for (const spy of spies) spy.mockRestore();
    };
  }

  async appendToStream(
    streamName: string,
    eventOrEvents: EventData | EventData[],
    { expectedRevision = ANY }: AppendToStreamOptions = {},
  ): Promise<AppendResult> {
    this.appendCalls.push({ streamName, expectedRevision });
    this.beforeAppend?.(streamName);
    await new Promise((resolve) => setImmediate(resolve));
    const events = Array.isArray(eventOrEvents) ? eventOrEvents : [eventOrEvents];
    const stream = this.streams.get(streamName) ?? [];
    const current = stream.length === 0 ? NO_STREAM : stream.at(-1)!.revision;
    const met =
      expectedRevision === ANY ||
      (expectedRevision === NO_STREAM && current === NO_STREAM) ||
      (expectedRevision === STREAM_EXISTS && current !== NO_STREAM) ||
      expectedRevision === current;
    if (!met) {
      const idempotent = this.storedRightAfter(stream, expectedRevision, events);
      if (idempotent) return idempotent;
      // The client's batch append reports BigInt(hasCurrentStreamRevision()) here: 1n.
      if (this.options.resolveConflicts)
        return { success: false, nextExpectedRevision: 1n, position: undefined };
      throw new WrongExpectedVersionError(undefined, { streamName, expected: expectedRevision, current });
    }
    let last: StoredRecord | undefined;
    for (const event of events) {
      last = this.write(streamName, {
        type: event.type,
        isJson: event.contentType === "application/json",
        id: event.id,
        text: event.contentType === "application/json" ? JSON.stringify(event.data) : "",
        metadataText: event.metadata === undefined ? undefined : JSON.stringify(event.metadata),
      });
      this.writeLinks(last);
    }
    return { success: true, nextExpectedRevision: last!.revision, position: last!.position };
  }

  readStream(streamName: string, options: ReadStreamOptions = {}): Readable & { cancel(): Promise<void> } {
    this.readStreamCalls.push({ streamName, options });
    const { direction = FORWARDS, fromRevision = START, maxCount = Number.MAX_SAFE_INTEGER } = options;
    const stream = this.streams.get(streamName);
    if (!stream) return streamingRead([], new StreamNotFoundError(undefined, streamName));
    const from = (revision: bigint) => stream.findIndex((record) => record.revision === revision);
    const records =
      direction === BACKWARDS
        ? stream.slice(0, fromRevision === END ? stream.length : from(fromRevision as bigint) + 1).reverse()
        : stream.slice(fromRevision === START ? 0 : from(fromRevision as bigint));
    return streamingRead(
      records
        .slice(0, Number(maxCount))
        .map((record): ResolvedEvent => ({ event: this.recorded(record, "stream") })),
    );
  }

  readAll(options: ReadAllOptions = {}): Readable & { cancel(): Promise<void> } {
    this.readAllCalls.push(options);
    const { direction = FORWARDS, fromPosition = START, maxCount = Number.MAX_SAFE_INTEGER } = options;
    if (direction !== FORWARDS) throw new Error("the fake reads $all forwards only");
    if (!isSendable(fromPosition)) return streamingRead([], unsendablePosition());
    const start =
      fromPosition === START
        ? 0
        : fromPosition === END
          ? this.log.length
          : this.firstIndexAtOrAfter(fromPosition);
    return streamingRead(
      this.log.slice(start, start + Number(maxCount)).map(
        (record): AllStreamResolvedEvent => ({
          event: this.recorded(record, "all") as AllStreamResolvedEvent["event"],
          commitPosition: record.position.commit,
        }),
      ),
    );
  }

  subscribeToAll(options: SubscribeToAllOptions = {}): AllStreamSubscription {
    this.subscribeCalls.push(options);
    const { fromPosition = START, filter } = options;
    if (!isSendable(fromPosition)) {
      return Object.assign(streamingRead([], unsendablePosition()), {
        unsubscribe: async () => {},
      }) as unknown as AllStreamSubscription;
    }
    const matches = (record: StoredRecord) => {
      if (!filter) return true;
      const value = filter.filterOn === EVENT_TYPE ? record.type : record.streamId;
      return "regex" in filter
        ? new RegExp(filter.regex).test(value)
        : filter.prefixes.some((prefix) => value.startsWith(prefix));
    };
    const readable = new Readable({ objectMode: true, read() {} });
    const deliver = (record: StoredRecord) => {
      if (matches(record))
        readable.push({ event: this.recorded(record, "all"), commitPosition: record.position.commit });
    };
    const start =
      fromPosition === START
        ? 0
        : fromPosition === END
          ? this.log.length
          : this.firstIndexAfter(fromPosition);
    for (const record of this.log.slice(start)) deliver(record);
    this.subscribers.add(deliver);
    let ended = false;
    const unsubscribe = async () => {
      this.subscribers.delete(deliver);
      if (!ended) readable.push(null);
      ended = true;
    };
    return Object.assign(readable, { unsubscribe }) as unknown as AllStreamSubscription;
  }

  /** A JSON event another client appends (under ANY), as it lands on the server. */
  writeAsAnotherClient(streamId: string, event: { type: string; data: unknown; metadata: unknown }): void {
    this.write(streamId, {
      type: event.type,
      isJson: true,
      id: crypto.randomUUID(),
      text: JSON.stringify(event.data),
      metadataText: JSON.stringify(event.metadata),
    });
  }

  /** A JSON event placed at a revision of its own choosing: a stream longer than a test could write. */
  writeAtRevision(
    streamId: string,
    revision: bigint,
    event: { type: string; data: unknown; metadata: unknown },
  ): void {
    const record = this.write(streamId, {
      type: event.type,
      isJson: true,
      id: crypto.randomUUID(),
      text: JSON.stringify(event.data),
      metadataText: JSON.stringify(event.metadata),
    });
    record.revision = revision;
  }

  /** Every record of a stream as stored (ids as the server writes them). */
  streamRecords(streamName: string): readonly StoredRecord[] {
    return this.streams.get(streamName) ?? [];
  }

  private storedRightAfter(
    stream: readonly StoredRecord[],
    expectedRevision: AppendExpectedRevision,
    events: readonly EventData[],
  ): AppendResult | undefined {
    if (typeof expectedRevision !== "bigint" && expectedRevision !== NO_STREAM) return undefined;
    const from = expectedRevision === NO_STREAM ? 0 : Number(expectedRevision) + 1;
    const stored = stream.slice(from, from + events.length);
    if (stored.length !== events.length) return undefined;
    if (!stored.every((record, index) => record.id === events[index]!.id.toLowerCase())) return undefined;
    return {
      success: true,
      nextExpectedRevision: stored.at(-1)!.revision,
      position: stored.at(-1)!.position,
    };
  }

  private writeLinks(event: StoredRecord): void {
    const links = [`$ce-${event.streamId.split("-")[0]}`, `$et-${event.type}`].slice(
      0,
      this.options.linksPerEvent ?? 0,
    );
    for (const streamId of links) {
      this.write(streamId, {
        type: "$>",
        isJson: false,
        id: crypto.randomUUID(),
        text: `${event.revision}@${event.streamId}`,
      });
    }
  }

  private write(
    streamId: string,
    event: { type: string; isJson: boolean; id: string; text: string; metadataText?: string | undefined },
  ): StoredRecord {
    const stream = this.streams.get(streamId) ?? [];
    const position = this.nextPosition;
    const record: StoredRecord = {
      streamId,
      id: event.id.toLowerCase(),
      revision: BigInt(stream.length),
      type: event.type,
      isJson: event.isJson,
      created: new Date(),
      dataText: event.text,
      metadataText: event.metadataText,
      position: { commit: position, prepare: position },
    };
    this.nextPosition += BigInt(
      128 + Buffer.byteLength(event.text) + Buffer.byteLength(event.metadataText ?? ""),
    );
    stream.push(record);
    this.streams.set(streamId, stream);
    this.log.push(record);
    for (const subscriber of this.subscribers) subscriber(record);
    return record;
  }

  private recorded(record: StoredRecord, readFrom: "stream" | "all"): RecordedEvent {
    const unknown = readFrom === "stream" && this.options.streamReadPositions === "unknown";
    return {
      streamId: record.streamId,
      id: record.id,
      isJson: record.isJson,
      revision: record.revision,
      type: record.type,
      created: record.created,
      data: record.isJson ? JSON.parse(record.dataText) : Buffer.from(record.dataText),
      metadata: record.metadataText === undefined ? undefined : JSON.parse(record.metadataText),
      position: unknown ? { commit: unknownPositionPart, prepare: unknownPositionPart } : record.position,
    } as RecordedEvent;
  }

  private firstIndexAtOrAfter(position: Position): number {
    const index = this.log.findIndex(
      (record) =>
        record.position.commit > position.commit ||
        (record.position.commit === position.commit && record.position.prepare >= position.prepare),
    );
    return index === -1 ? this.log.length : index;
  }

  private firstIndexAfter(position: Position): number {
    const index = this.log.findIndex(
      (record) =>
        record.position.commit > position.commit ||
        (record.position.commit === position.commit && record.position.prepare > position.prepare),
    );
    return index === -1 ? this.log.length : index;
  }
}

function isSendable(position: ReadAllOptions["fromPosition"]): boolean {
  return typeof position !== "object" || (position.commit >= 0n && position.prepare >= 0n);
}

/** What the client reports for a request it could not serialise (a negative uint64), as seen on it. */
function unsendablePosition(): Error {
  return new UnknownError(
    undefined,
    "13 INTERNAL: Request message serialization failure: Cannot read properties of null (reading 'lo')",
  );
}

/** A finished read as the client returns it: a readable of resolved events, with `cancel`; or its error. */
function streamingRead<T>(items: readonly T[], error?: Error): Readable & { cancel(): Promise<void> } {
  const readable = new Readable({ objectMode: true, read() {} });
  if (error) process.nextTick(() => readable.destroy(error));
  else {
    for (const item of items) readable.push(item);
    readable.push(null);
  }
  return Object.assign(readable, { cancel: async () => {} });
}
