import {
  type AppendExpectedRevision,
  BACKWARDS,
  END,
  WrongExpectedVersionError as EsdbWrongExpectedVersionError,
  EventStoreDBClient,
  excludeSystemEvents,
  FORWARDS,
  jsonEvent,
  NO_STREAM,
  type Position,
  START,
  StreamNotFoundError,
} from "@eventstore/db-client";
import {
  type EventMetadata,
  isLedgerEventType,
  type LedgerEventType,
  upcastEventData,
  writtenSchemaVersionOf,
} from "../events";
import { eventChainHash, genesisHash } from "../integrity/event-hash";
import {
  type AppendResult,
  appendOneByOne,
  type EventStore,
  IdempotencyConflictError,
  type ReadAllOptions,
  type RecordedEvent,
  type StreamAppend,
  type SubscribeOptions,
  WrongExpectedVersionError,
} from "./event-store";
import { compareLogPositions, type LogPosition } from "./log-position";

/**
 * EventStoreDB event store (selected by EVENTSTORE_URL). Stream revisions are the store's own versions;
 * the global position is the (commit, prepare) pair of the transaction file. The schema version travels in
 * the event metadata. EventStoreDB has no multi-stream transaction: `appendBatch` appends one by one.
 */
export class EventStoreDbEventStore implements EventStore {
  readonly kind = "eventstoredb";
  private readonly client: EventStoreDBClient;

  constructor(connectionString: string) {
    this.client = EventStoreDBClient.connectionString`${connectionString}`;
  }

  /**
   * The appender computes each event's chain hash (event-hash.ts, as PostgreSQL's trigger does) and keeps
   * it in the event's metadata; the hashed data and metadata texts are JSON.stringify of the event's data
   * and of its ledger metadata (without the store's own fields), which is what the client stores. To
   * chain to the head it read, the append expects that head's revision; under "any", a lost race is
   * read and chained again, a bounded number of times.
   */
  async append(append: StreamAppend): Promise<AppendResult> {
    for (let attempt = 0; ; attempt++) {
      const head = await this.streamHead(append.streamId);
      if (append.expectedVersion !== "any") {
        const expected = append.expectedVersion === "no-stream" ? -1 : append.expectedVersion;
        if (expected !== head.version) {
          const stored = await this.findStoredAppend(append);
          if (stored) return stored;
          throw new WrongExpectedVersionError(append.streamId, append.expectedVersion, head.version);
        }
      }
      try {
        return await this.appendChained(append, head);
      } catch (error) {
        if (!(error instanceof EsdbWrongExpectedVersionError)) throw error;
        const stored = await this.findStoredAppend(append);
        if (stored) return stored;
        if (append.expectedVersion === "any" && attempt < anyVersionRetriesMax) continue;
        const actual = error.actualVersion;
        throw new WrongExpectedVersionError(
          append.streamId,
          append.expectedVersion,
          typeof actual === "bigint" ? Number(actual) : -1,
        );
      }
    }
  }

  private async appendChained(append: StreamAppend, head: StreamHead): Promise<AppendResult> {
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
    const result = await this.client.appendToStream(append.streamId, events, {
      expectedRevision: toExpectedRevision(head.version),
    });
    if (!result.position) throw new Error("EventStoreDB returned no position for an append");
    return {
      streamId: append.streamId,
      streamVersion: Number(result.nextExpectedRevision),
      position: fromPosition(result.position),
    };
  }

  /** The stream's last revision (-1 when it has none) and the hash the next event chains to. */
  private async streamHead(streamId: string): Promise<StreamHead> {
    try {
      for await (const resolved of this.client.readStream(streamId, {
        direction: BACKWARDS,
        fromRevision: END,
        maxCount: 1,
      })) {
        const event = resolved.event;
        if (!event) continue;
        const stored = (event.metadata as { chainHash?: unknown } | undefined)?.chainHash;
        return {
          version: Number(event.revision),
          // An event written before the chain existed: the next one starts it, as in PostgreSQL.
          chainHash: typeof stored === "string" ? Buffer.from(stored, "hex") : genesisHash,
        };
      }
    } catch (error) {
      if (!(error instanceof StreamNotFoundError)) throw error;
    }
    return { version: -1, chainHash: genesisHash };
  }

  async appendBatch(appends: readonly StreamAppend[]): Promise<PromiseSettledResult<AppendResult>[]> {
    return appendOneByOne(this, appends);
  }

  async readStream(streamId: string): Promise<RecordedEvent[]> {
    const events: RecordedEvent[] = [];
    try {
      for await (const resolved of this.client.readStream(streamId, {
        direction: FORWARDS,
        fromRevision: START,
      })) {
        if (resolved.event) events.push(toRecordedEvent(resolved.event));
      }
    } catch (error) {
      if (error instanceof StreamNotFoundError) return [];
      throw error;
    }
    return events;
  }

  async readStreams(streamIds: readonly string[]): Promise<Map<string, RecordedEvent[]>> {
    const read = await Promise.all(
      streamIds.map(async (streamId) => [streamId, await this.readStream(streamId)] as const),
    );
    return new Map(read);
  }

  async readAll(options: ReadAllOptions): Promise<RecordedEvent[]> {
    const events: RecordedEvent[] = [];
    // The read starts at `after` inclusive, so ask for one more and drop it.
    const read = this.client.readAll({
      direction: FORWARDS,
      fromPosition: options.after ? toPosition(options.after) : START,
      maxCount: options.limit + 1,
    });
    for await (const resolved of read) {
      const event = resolved.event;
      if (!event || !isLedgerEventType(event.type) || event.streamId.startsWith("$")) continue;
      const recorded = toRecordedEvent(event);
      if (options.after && compareLogPositions(recorded.position, options.after) <= 0) continue;
      events.push(recorded);
      if (events.length === options.limit) break;
    }
    return events;
  }

  async subscribe(options: SubscribeOptions): Promise<void> {
    const subscription = this.client.subscribeToAll({
      fromPosition: options.after ? toPosition(options.after) : START,
      filter: excludeSystemEvents(),
    });
    const stop = () => void subscription.unsubscribe();
    options.signal.addEventListener("abort", stop, { once: true });
    try {
      for await (const resolved of subscription) {
        if (options.signal.aborted) break;
        const event = resolved.event;
        if (!event || !isLedgerEventType(event.type)) continue;
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

  private async findStoredAppend(append: StreamAppend): Promise<AppendResult | undefined> {
    const wanted = new Set(append.events.map((entry) => entry.eventId));
    const stored = (await this.readStream(append.streamId)).filter((event) => wanted.has(event.eventId));
    if (stored.length === 0) return undefined;
    if (stored.length !== wanted.size) throw new IdempotencyConflictError(append.streamId);
    const last = stored[stored.length - 1]!;
    return { streamId: append.streamId, streamVersion: last.streamVersion, position: last.position };
  }
}

const anyVersionRetriesMax = 10;

interface StreamHead {
  version: number;
  chainHash: Buffer;
}

function toExpectedRevision(headVersion: number): AppendExpectedRevision {
  return headVersion < 0 ? NO_STREAM : BigInt(headVersion);
}

function toPosition(position: LogPosition): Position {
  return { commit: position.commit, prepare: position.prepare };
}

function fromPosition(position: Position): LogPosition {
  return { commit: position.commit, prepare: position.prepare };
}

interface EsdbRecordedEvent {
  id: string;
  streamId: string;
  revision: bigint;
  type: string;
  created: Date;
  data: unknown;
  metadata: unknown;
  position?: Position;
}

function toRecordedEvent(event: EsdbRecordedEvent): RecordedEvent {
  if (!isLedgerEventType(event.type))
    throw new Error(`unknown event type ${event.type} in ${event.streamId}`);
  if (!event.position) throw new Error(`event ${event.id} has no log position`);
  const {
    schemaVersion,
    chainHash: _chainHash,
    ...metadata
  } = event.metadata as EventMetadata & {
    schemaVersion: number;
    chainHash?: string;
  };
  const type: LedgerEventType = event.type;
  return {
    type,
    data: upcastEventData(type, schemaVersion, event.data),
    metadata,
    eventId: event.id,
    streamId: event.streamId,
    streamVersion: Number(event.revision),
    position: fromPosition(event.position),
    recordedAt: event.created,
  } as RecordedEvent;
}
