import {
  ANY,
  type AppendExpectedRevision,
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
  type AppendResult,
  appendOneByOne,
  type EventStore,
  type ExpectedVersion,
  IdempotencyConflictError,
  type ReadAllOptions,
  type RecordedEvent,
  type StreamAppend,
  type SubscribeOptions,
  WrongExpectedVersionError,
} from "./event-store";
import {
  type EventMetadata,
  isLedgerEventType,
  type LedgerEventType,
  schemaVersionOf,
  upcastEventData,
} from "./events";
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

  async append(append: StreamAppend): Promise<AppendResult> {
    const events = append.events.map(({ eventId, event }) =>
      jsonEvent({
        id: eventId,
        type: event.type,
        data: event.data as Record<string, unknown>,
        metadata: { ...event.metadata, schemaVersion: schemaVersionOf(event.type) },
      }),
    );
    try {
      const result = await this.client.appendToStream(append.streamId, events, {
        expectedRevision: toExpectedRevision(append.expectedVersion),
      });
      if (!result.position) throw new Error("EventStoreDB returned no position for an append");
      return {
        streamId: append.streamId,
        streamVersion: Number(result.nextExpectedRevision),
        position: fromPosition(result.position),
      };
    } catch (error) {
      if (!(error instanceof EsdbWrongExpectedVersionError)) throw error;
      const stored = await this.findStoredAppend(append);
      if (stored) return stored;
      const actual = error.actualVersion;
      throw new WrongExpectedVersionError(
        append.streamId,
        append.expectedVersion,
        typeof actual === "bigint" ? Number(actual) : -1,
      );
    }
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

function toExpectedRevision(expected: ExpectedVersion): AppendExpectedRevision {
  if (expected === "any") return ANY;
  if (expected === "no-stream") return NO_STREAM;
  return BigInt(expected);
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
  const { schemaVersion, ...metadata } = event.metadata as EventMetadata & { schemaVersion: number };
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
