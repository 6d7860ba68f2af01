import pg from "pg";
import {
  type AppendResult,
  type EventStore,
  type ExpectedVersion,
  IdempotencyConflictError,
  type ReadAllOptions,
  type RecordedEvent,
  type StreamAppend,
  type SubscribeOptions,
  WrongExpectedVersionError,
} from "./event-store";
import { type LedgerEvent, type LedgerEventType, schemaVersionOf, upcastEventData } from "./events";
import { logStart } from "./log-position";

/**
 * PostgreSQL event store.
 *
 * Global order: every event carries the id of the transaction that wrote it, and the log is ordered by
 * (transaction order, position). A reader only returns events of transactions older than the oldest one
 * still running (`pg_snapshot_xmin`), so an event committed late by a transaction that started early can
 * never be skipped: until it commits, nothing after it is visible. Each append is one statement, so it
 * commits on its own and the statement-level trigger wakes subscribers through LISTEN/NOTIFY.
 */

const expectedAny = -2;
const expectedNoStream = -1;
const anyVersionRetriesMax = 10;
const notificationChannel = "ledger_events";

interface PostgresEventStoreOptions {
  pool: pg.Pool;
  /** Connection string for the dedicated LISTEN connection. */
  listenConnectionString: string;
  /** How often a subscriber polls when no notification arrives (a lost NOTIFY, a stuck xmin). */
  pollIntervalMs: number;
}

export class PostgresEventStore implements EventStore {
  readonly kind = "postgresql";
  private readonly pool: pg.Pool;
  private readonly listenConnectionString: string;
  private readonly pollIntervalMs: number;
  private transactionOrderOffset = 0n;
  private listener: NotificationListener | undefined;

  private constructor(options: PostgresEventStoreOptions) {
    this.pool = options.pool;
    this.listenConnectionString = options.listenConnectionString;
    this.pollIntervalMs = options.pollIntervalMs;
  }

  /** The schema must be migrated (`migrate`) before. */
  static async open(options: PostgresEventStoreOptions): Promise<PostgresEventStore> {
    const store = new PostgresEventStore(options);
    store.transactionOrderOffset = await advanceTransactionOrderOffset(options.pool);
    return store;
  }

  async append(append: StreamAppend): Promise<AppendResult> {
    for (let attempt = 0; ; attempt++) {
      try {
        const [result] = await this.insert([append]);
        return result!;
      } catch (error) {
        const resolved = await this.resolveFailedAppend(append, error);
        if (resolved === "retry" && attempt < anyVersionRetriesMax) continue;
        if (resolved === "retry") throw error;
        return resolved;
      }
    }
  }

  async appendBatch(appends: readonly StreamAppend[]): Promise<PromiseSettledResult<AppendResult>[]> {
    if (appends.length === 0) return [];
    if (canInsertTogether(appends)) {
      try {
        const results = await this.insert(appends);
        return results.map((value) => ({ status: "fulfilled", value }));
      } catch {
        // One append failed and the statement wrote nothing: retry one by one to report each outcome.
      }
    }
    // One by one and in order: appends to the same stream depend on each other.
    const outcomes: PromiseSettledResult<AppendResult>[] = [];
    for (const append of appends) {
      try {
        outcomes.push({ status: "fulfilled", value: await this.append(append) });
      } catch (reason) {
        outcomes.push({ status: "rejected", reason });
      }
    }
    return outcomes;
  }

  async readStream(streamId: string): Promise<RecordedEvent[]> {
    const result = await this.pool.query<EventRow>(
      `SELECT ${eventColumns} FROM ledger_events WHERE stream_id = $1 ORDER BY stream_version`,
      [streamId],
    );
    return result.rows.map(toRecordedEvent);
  }

  async readAll(options: ReadAllOptions): Promise<RecordedEvent[]> {
    const after = options.after ?? logStart;
    const result = await this.pool.query<EventRow>({
      name: "ledger-read-all",
      text: `SELECT ${eventColumns} FROM ledger_events
             WHERE (transaction_order, position) > ($1, $2)
               AND transaction_order < pg_snapshot_xmin(pg_current_snapshot())::text::bigint + $3
             ORDER BY transaction_order, position
             LIMIT $4`,
      values: [after.commit, after.prepare, this.transactionOrderOffset, options.limit],
    });
    return result.rows.map(toRecordedEvent);
  }

  async subscribe(options: SubscribeOptions): Promise<void> {
    const listener = await this.notifications();
    let after = options.after;
    while (!options.signal.aborted) {
      const wake = listener.nextWake(this.pollIntervalMs, options.signal);
      const events = await this.readAll({ limit: options.batchSizeMax, ...(after ? { after } : {}) });
      if (events.length > 0) {
        wake.cancel();
        await options.handle(events);
        after = events[events.length - 1]!.position;
        continue;
      }
      await wake.promise;
    }
  }

  async close(): Promise<void> {
    await this.listener?.close();
    this.listener = undefined;
  }

  private async notifications(): Promise<NotificationListener> {
    this.listener ??= await NotificationListener.start(this.listenConnectionString, notificationChannel);
    return this.listener;
  }

  private async insert(appends: readonly StreamAppend[]): Promise<AppendResult[]> {
    const columns = toInsertColumns(appends);
    const result = await this.pool.query<{
      event_id: string;
      stream_id: string;
      stream_version: number;
      transaction_order: string;
      position: string;
    }>({
      name: "ledger-append",
      text: appendStatement,
      values: [...columns, this.transactionOrderOffset],
    });
    if (result.rows.length !== columns[0].length) throw new ExpectationNotMet();
    const byEventId = new Map(result.rows.map((row) => [row.event_id, row]));
    return appends.map((append) => {
      const last = byEventId.get(append.events[append.events.length - 1]!.eventId)!;
      return {
        streamId: last.stream_id,
        streamVersion: last.stream_version,
        position: { commit: BigInt(last.transaction_order), prepare: BigInt(last.position) },
      };
    });
  }

  /**
   * After a failed append: an identical retry of an append that was stored returns the stored result;
   * a lost race under `any` is retried; anything else is a wrong expected version.
   */
  private async resolveFailedAppend(append: StreamAppend, error: unknown): Promise<AppendResult | "retry"> {
    const isConflict = error instanceof ExpectationNotMet || isUniqueViolation(error);
    if (!isConflict) throw error;
    const stored = await this.findStoredAppend(append);
    if (stored) return stored;
    if (append.expectedVersion === "any") return "retry";
    const actualVersion = await this.streamVersion(append.streamId);
    throw new WrongExpectedVersionError(append.streamId, append.expectedVersion, actualVersion);
  }

  private async findStoredAppend(append: StreamAppend): Promise<AppendResult | undefined> {
    const eventIds = append.events.map((entry) => entry.eventId);
    const result = await this.pool.query<{
      stream_id: string;
      stream_version: number;
      transaction_order: string;
      position: string;
    }>(
      `SELECT stream_id, stream_version, transaction_order, position FROM ledger_events
       WHERE event_id = ANY($1::uuid[]) ORDER BY transaction_order, position`,
      [eventIds],
    );
    if (result.rows.length === 0) return undefined;
    const allInStream = result.rows.every((row) => row.stream_id === append.streamId);
    if (result.rows.length !== eventIds.length || !allInStream)
      throw new IdempotencyConflictError(append.streamId);
    const last = result.rows[result.rows.length - 1]!;
    return {
      streamId: append.streamId,
      streamVersion: last.stream_version,
      position: { commit: BigInt(last.transaction_order), prepare: BigInt(last.position) },
    };
  }

  private async streamVersion(streamId: string): Promise<number> {
    const result = await this.pool.query<{ version: number | null }>(
      "SELECT max(stream_version) AS version FROM ledger_events WHERE stream_id = $1",
      [streamId],
    );
    return result.rows[0]?.version ?? -1;
  }
}

class ExpectationNotMet extends Error {}

/**
 * One statement appends to many streams: it finds each stream's head, and inserts nothing at all when any
 * expectation fails. The unique (stream_id, stream_version) constraint catches writers that race between
 * reading a head and inserting.
 */
const appendStatement = `
  WITH input AS (
    SELECT * FROM unnest($1::uuid[], $2::text[], $3::int[], $4::text[], $5::smallint[], $6::jsonb[], $7::jsonb[], $8::int[])
      WITH ORDINALITY AS input(event_id, stream_id, index_in_stream, type, schema_version, data, metadata, expected_version, ordinal)
  ),
  heads AS (
    SELECT streams.stream_id,
           coalesce((SELECT max(events.stream_version) FROM ledger_events events WHERE events.stream_id = streams.stream_id), -1) AS head
    FROM (SELECT DISTINCT stream_id FROM input) streams
  )
  INSERT INTO ledger_events (transaction_order, event_id, stream_id, stream_version, type, schema_version, data, metadata)
  SELECT pg_current_xact_id()::text::bigint + $9, input.event_id, input.stream_id, heads.head + 1 + input.index_in_stream,
         input.type, input.schema_version, input.data, input.metadata
  FROM input JOIN heads USING (stream_id)
  WHERE NOT EXISTS (
    SELECT 1 FROM input failed JOIN heads failed_head USING (stream_id)
    WHERE failed.expected_version <> ${expectedAny} AND failed.expected_version <> failed_head.head
  )
  ORDER BY input.ordinal
  RETURNING event_id, stream_id, stream_version, transaction_order, position`;

type InsertColumns = [string[], string[], number[], string[], number[], string[], string[], number[]];

/**
 * Several appends to one stream can share a statement when each later one continues where the previous
 * left off: only the first is checked against the stream's head, the rest follow by construction.
 */
function canInsertTogether(appends: readonly StreamAppend[]): boolean {
  const nextVersion = new Map<string, number | "unknown">();
  for (const append of appends) {
    const expected = append.expectedVersion;
    const previous = nextVersion.get(append.streamId);
    if (
      previous !== undefined &&
      expected !== "any" &&
      (previous === "unknown" || expected !== previous - 1)
    ) {
      return false;
    }
    const base = previous ?? (expected === "any" ? "unknown" : expected === "no-stream" ? 0 : expected + 1);
    nextVersion.set(append.streamId, base === "unknown" ? "unknown" : base + append.events.length);
  }
  return true;
}

function toInsertColumns(appends: readonly StreamAppend[]): InsertColumns {
  const columns: InsertColumns = [[], [], [], [], [], [], [], []];
  const eventsSoFar = new Map<string, number>();
  for (const append of appends) {
    if (append.events.length === 0) throw new RangeError(`append to ${append.streamId} has no events`);
    const offset = eventsSoFar.get(append.streamId);
    // A later append to a stream already in this statement was checked by canInsertTogether.
    const expected = offset === undefined ? encodeExpectedVersion(append.expectedVersion) : expectedAny;
    append.events.forEach(({ eventId, event }, index) => {
      columns[0].push(eventId);
      columns[1].push(append.streamId);
      columns[2].push((offset ?? 0) + index);
      columns[3].push(event.type);
      columns[4].push(schemaVersionOf(event.type));
      columns[5].push(JSON.stringify(event.data));
      columns[6].push(JSON.stringify(event.metadata));
      columns[7].push(expected);
    });
    eventsSoFar.set(append.streamId, (offset ?? 0) + append.events.length);
  }
  return columns;
}

function encodeExpectedVersion(expected: ExpectedVersion): number {
  if (expected === "any") return expectedAny;
  if (expected === "no-stream") return expectedNoStream;
  if (!Number.isInteger(expected) || expected < 0) throw new RangeError(`bad expected version ${expected}`);
  return expected;
}

const eventColumns =
  "transaction_order, position, event_id, stream_id, stream_version, type, schema_version, data, metadata, recorded_at";

interface EventRow {
  transaction_order: string;
  position: string;
  event_id: string;
  stream_id: string;
  stream_version: number;
  type: LedgerEventType;
  schema_version: number;
  data: unknown;
  metadata: LedgerEvent["metadata"];
  recorded_at: Date;
}

function toRecordedEvent(row: EventRow): RecordedEvent {
  return {
    type: row.type,
    data: upcastEventData(row.type, row.schema_version, row.data),
    metadata: row.metadata,
    eventId: row.event_id,
    streamId: row.stream_id,
    streamVersion: row.stream_version,
    position: { commit: BigInt(row.transaction_order), prepare: BigInt(row.position) },
    recordedAt: row.recorded_at,
  } as RecordedEvent;
}

function isUniqueViolation(error: unknown): boolean {
  return error instanceof pg.DatabaseError && error.code === "23505";
}

/**
 * A restored backup can start handing out transaction ids below the ones already stored, which would put
 * new events before old ones. At start, raise the offset so the next transaction order is above every
 * stored one. The settings row lock makes concurrent starts agree on one offset.
 */
async function advanceTransactionOrderOffset(pool: pg.Pool): Promise<bigint> {
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    const settings = await client.query<{ offset: string; newest: string | null; current: string }>(
      `SELECT settings.transaction_order_offset AS offset,
              (SELECT max(transaction_order) FROM ledger_events) AS newest,
              pg_current_xact_id()::text AS current
       FROM ledger_settings settings FOR UPDATE`,
    );
    const row = settings.rows[0]!;
    let offset = BigInt(row.offset);
    if (row.newest !== null && BigInt(row.current) + offset <= BigInt(row.newest)) {
      offset = BigInt(row.newest) - BigInt(row.current) + 1n;
      await client.query("UPDATE ledger_settings SET transaction_order_offset = $1", [offset]);
    }
    await client.query("COMMIT");
    return offset;
  } catch (error) {
    await client.query("ROLLBACK").catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}

interface Wake {
  promise: Promise<void>;
  cancel(): void;
}

/** One LISTEN connection per store, shared by its subscribers. Reconnects if the connection drops. */
class NotificationListener {
  private waiters = new Set<() => void>();
  private client: pg.Client | undefined;
  private closed = false;

  private constructor(
    private readonly connectionString: string,
    private readonly channel: string,
  ) {}

  static async start(connectionString: string, channel: string): Promise<NotificationListener> {
    const listener = new NotificationListener(connectionString, channel);
    await listener.connect();
    return listener;
  }

  nextWake(timeoutMs: number, signal: AbortSignal): Wake {
    let finish = () => {};
    const promise = new Promise<void>((resolve) => {
      const timer = setTimeout(() => finish(), timeoutMs);
      const onAbort = () => finish();
      finish = () => {
        clearTimeout(timer);
        signal.removeEventListener("abort", onAbort);
        this.waiters.delete(finish);
        resolve();
      };
      signal.addEventListener("abort", onAbort, { once: true });
      this.waiters.add(finish);
    });
    return { promise, cancel: () => finish() };
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const wake of [...this.waiters]) wake();
    await this.client?.end().catch(() => {});
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({
      connectionString: this.connectionString,
      application_name: "ledger-listen",
    });
    client.on("notification", () => this.wakeAll());
    client.on("error", () => this.reconnectLater());
    await client.connect();
    await client.query(`LISTEN ${this.channel}`);
    this.client = client;
  }

  private wakeAll(): void {
    for (const wake of [...this.waiters]) wake();
  }

  private reconnectLater(): void {
    this.client = undefined;
    if (this.closed) return;
    // Polling covers the gap; reconnect in the background so notifications resume.
    setTimeout(() => {
      if (!this.closed) this.connect().catch(() => this.reconnectLater());
    }, 1_000).unref();
  }
}
