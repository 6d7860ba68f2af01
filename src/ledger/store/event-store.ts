import type { EventHead, LedgerEvent } from "../events";
import type { LogPosition } from "./log-position";

/**
 * The event store contract, implemented by PostgreSQL (default) and EventStoreDB. Streams are named
 * `kind-id`; a stream's versions count from 0.
 */

/** `no-stream`: the stream must not exist; `any`: no check; a number: the stream's last version. */
export type ExpectedVersion = "no-stream" | "any" | number;

export interface EventToAppend {
  /** Client-chosen id; appending the same id again is an idempotent no-op that returns the stored result. */
  eventId: string;
  event: LedgerEvent;
}

export interface StreamAppend {
  streamId: string;
  expectedVersion: ExpectedVersion;
  events: readonly EventToAppend[];
}

export interface AppendBatchOptions {
  /**
   * PostgreSQL: each statement waits at most this long for each lock on the rows it moves (`lock_timeout`):
   * the funds its appends' triggers move, which a transaction left open may keep. A batch that waited past it
   * appended nothing and rejects whole with RowsLockedError (src/database/lock-wait.ts); one appended one by
   * one has that outcome alone. Absent: as long as the server's settings say. EventStoreDB keeps no such rows.
   */
  lockWaitMs?: number;
}

export interface AppendResult {
  streamId: string;
  /** Version of the last event of this append: the expected version of the next one. */
  streamVersion: number;
  /** Log position of the last event of this append (for read-your-writes waits). */
  position: LogPosition;
}

export type RecordedEvent = LedgerEvent & {
  readonly eventId: string;
  readonly streamId: string;
  readonly streamVersion: number;
  readonly position: LogPosition;
  readonly recordedAt: Date;
};

/** An event's head (events.ts) at its place in the log: what a reader needs that folds events in SQL. */
export type RecordedEventHead = EventHead & { readonly position: LogPosition };

export interface ReadAllOptions {
  /** Exclusive; the start of the log when absent. */
  after?: LogPosition;
  limit: number;
}

export interface SubscribeOptions<Item = RecordedEvent> {
  after?: LogPosition;
  batchSizeMax: number;
  /** Called with consecutive batches in log order; the next batch waits for the returned promise. */
  handle(events: readonly Item[]): Promise<void>;
  signal: AbortSignal;
}

export interface EventStore {
  readonly kind: "postgresql" | "eventstoredb";
  append(append: StreamAppend): Promise<AppendResult>;
  /**
   * Appends with one outcome each, applied in order. PostgreSQL commits them in one statement when all
   * succeed and they name distinct streams (group commit), else one by one to report each outcome.
   */
  appendBatch(
    appends: readonly StreamAppend[],
    options?: AppendBatchOptions,
  ): Promise<PromiseSettledResult<AppendResult>[]>;
  readStream(streamId: string): Promise<RecordedEvent[]>;
  /**
   * The stream's last event, or its last of `type` when named; undefined when it has none. What a command
   * deciding at a stream's head reads, however long the stream has grown.
   */
  readLastEvent<T extends RecordedEvent["type"] = RecordedEvent["type"]>(
    streamId: string,
    type?: T,
  ): Promise<RecordedEventOf<T> | undefined>;
  /** Several streams at once (one round trip where the store allows): every id maps to its events, or []. */
  readStreams(streamIds: readonly string[]): Promise<Map<string, RecordedEvent[]>>;
  /** Events in log order. Never returns an event while an earlier one may still be committed. */
  readAll(options: ReadAllOptions): Promise<RecordedEvent[]>;
  /**
   * Every event visible now, in log order, in pages of at most `pageSize`: for rebuilds, which read the
   * whole log once. Optional: where absent, readers page with `readAll`.
   */
  readWholeLog?(pageSize: number): AsyncIterable<RecordedEvent[]>;
  /**
   * The heads of the events `readAll` would read, without their data: optional, where the store can read
   * less than whole events (PostgreSQL).
   */
  readAllHeads?(options: ReadAllOptions): Promise<RecordedEventHead[]>;
  /** Catches up from `after`, then follows the log until the signal aborts. Resolves when stopped. */
  subscribe(options: SubscribeOptions): Promise<void>;
  /** `subscribe` with the events' heads (`readAllHeads`); optional as it is. */
  subscribeToHeads?(options: SubscribeOptions<RecordedEventHead>): Promise<void>;
  close(): Promise<void>;
}

export class WrongExpectedVersionError extends Error {
  override readonly name = "WrongExpectedVersionError";
  constructor(
    readonly streamId: string,
    readonly expectedVersion: ExpectedVersion,
    /** -1 when the stream does not exist. */
    readonly actualVersion: number,
  ) {
    super(`stream ${streamId}: expected version ${expectedVersion}, actual ${actualVersion}`);
  }
}

/** Some, not all, of an append's event ids are stored already: a retry that is not the same append. */
export class IdempotencyConflictError extends Error {
  override readonly name = "IdempotencyConflictError";
  constructor(readonly streamId: string) {
    super(`stream ${streamId}: an event id of this append was stored before as part of another append`);
  }
}

/** Appends in order, one outcome each: what a batch falls back to when it cannot go in one statement. */
export async function appendOneByOne(
  store: Pick<EventStore, "append">,
  appends: readonly StreamAppend[],
): Promise<PromiseSettledResult<AppendResult>[]> {
  const outcomes: PromiseSettledResult<AppendResult>[] = [];
  for (const append of appends) {
    try {
      outcomes.push({ status: "fulfilled", value: await store.append(append) });
    } catch (reason) {
      outcomes.push({ status: "rejected", reason });
    }
  }
  return outcomes;
}

export type RecordedEventOf<T extends RecordedEvent["type"]> = Extract<RecordedEvent, { type: T }>;
