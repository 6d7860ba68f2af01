import pg from "pg";
import type { Logger } from "pino";
import { advisoryLockKeys } from "../../database/advisory-lock-keys";
import { inOneTransaction } from "../../database/in-one-transaction";
import { ListenConnection } from "../../database/listen-connection";
import { isLockNotAvailable, lockTimeoutSettingOf, RowsLockedError } from "../../database/lock-wait";
import {
  type AccountReference,
  accountFieldOf,
  type LedgerEvent,
  type LedgerEventType,
  ledgerEventTypes,
  upcastEventData,
  writtenSchemaVersionOf,
} from "../events";
import {
  type AppendBatchOptions,
  type AppendResult,
  appendOneByOne,
  type EventStore,
  type ExpectedVersion,
  IdempotencyConflictError,
  type ReadAllOptions,
  type RecordedEvent,
  type RecordedEventHead,
  type RecordedEventOf,
  type StreamAppend,
  type SubscribeOptions,
  WrongExpectedVersionError,
} from "./event-store";
import { copyWholeLog } from "./log-copy-reader";
import { type LogPosition, logStart } from "./log-position";
import { visibleTransactionOrderBelow } from "./log-visibility";

/**
 * PostgreSQL event store.
 *
 * Global order: every event carries the id of the transaction that wrote it, and the log is ordered by
 * (transaction order, position). A reader only returns events of transactions older than the oldest one
 * still running (`pg_snapshot_xmin`), so an event committed late by a transaction that started early can
 * never be skipped: until it commits, nothing after it is visible. Each append is one statement, so it
 * commits on its own.
 *
 * Subscribers are woken with LISTEN/NOTIFY, sent after the append commits rather than inside it: a
 * transaction that notifies holds a global lock through its commit, which would serialise every append's
 * commit (and its fsync). Notifications are coalesced to one in flight at a time; polling covers a lost one.
 */

const expectedAny = -2;
const expectedNoStream = -1;
const anyVersionRetriesMax = 10;
const notificationChannel = "ledger_events";
const notifyIntervalMs = 5;

interface PostgresEventStoreOptions {
  pool: pg.Pool;
  /** Connection string for the dedicated LISTEN connection. */
  listenConnectionString: string;
  /** How often a subscriber polls when no notification arrives (a lost NOTIFY, a stuck xmin). */
  pollIntervalMs: number;
  /** Where the LISTEN connection says it lost PostgreSQL and got it back. */
  logger?: Logger | undefined;
  /**
   * True (the default): the append statement hashes each stream's first event itself, from the head it
   * reads anyway, where the trigger would look it up again (and costs a PL/pgSQL call per row). Single
   * appends too: 20 interleaved rounds of 16 writers, twice, put them at 0.95 and 0.96 of unchained
   * appends this way, against 0.92 and 0.93 chained by the trigger. False leaves every hash to the
   * trigger, as any other insert path does; for the benchmark's baselines.
   */
  chainInStatement?: boolean;
}

export class PostgresEventStore implements EventStore {
  readonly kind = "postgresql";
  private readonly pool: pg.Pool;
  private readonly listenConnectionString: string;
  private readonly pollIntervalMs: number;
  private readonly logger: Logger | undefined;
  private readonly chainInStatement: boolean;
  private transactionOrderOffset = 0n;
  private listener: NotificationListener | undefined;
  private notifying: "idle" | "sending" | "sending-then-again" = "idle";

  private constructor(options: PostgresEventStoreOptions) {
    this.pool = options.pool;
    this.listenConnectionString = options.listenConnectionString;
    this.pollIntervalMs = options.pollIntervalMs;
    this.logger = options.logger;
    this.chainInStatement = options.chainInStatement ?? true;
  }

  /** The schema must be migrated (`migrate`) before. */
  static async open(options: PostgresEventStoreOptions): Promise<PostgresEventStore> {
    const store = new PostgresEventStore(options);
    store.transactionOrderOffset = await advanceTransactionOrderOffset(options.pool);
    return store;
  }

  /** `options`: as appendBatch's, for a batch's appends made one by one. */
  async append(append: StreamAppend, options: AppendBatchOptions = {}): Promise<AppendResult> {
    // An append with expected version "any" tries one statement first, and takes its turn once it lost.
    for (let attempt = 0; ; attempt++) {
      try {
        const [result] =
          attempt === 0
            ? await this.insert([append], this.pool, options)
            : await this.insertInTurn(append, options);
        this.notifySubscribers();
        return result!;
      } catch (error) {
        const resolved = await this.resolveFailedAppend(append, error);
        if (resolved === "retry" && attempt < anyVersionRetriesMax) continue;
        if (resolved === "retry") throw error;
        return resolved;
      }
    }
  }

  async appendBatch(
    appends: readonly StreamAppend[],
    options: AppendBatchOptions = {},
  ): Promise<PromiseSettledResult<AppendResult>[]> {
    if (appends.length === 0) return [];
    if (canInsertTogether(appends)) {
      try {
        const results = await this.insert(appends, this.pool, options);
        this.notifySubscribers();
        return results.map((value) => ({ status: "fulfilled", value }));
      } catch (error) {
        // Given up on a row: one by one, each append on that row would wait as long again.
        if (error instanceof RowsLockedError) throw error;
        // One append failed and the statement wrote nothing: retry one by one to report each outcome.
      }
    }
    // One by one and in order: appends to the same stream depend on each other.
    return appendOneByOne({ append: (append) => this.append(append, options) }, appends);
  }

  /**
   * For a statement that appends to the log itself, beside this store (the hold authorization of C10,
   * which decides and appends in one statement): the offset every transaction order carries here, and
   * the nudge that wakes this store's subscribers once such a statement has committed events.
   */
  get appendsBeside(): { readonly transactionOrderOffset: bigint; committed(): void } {
    const store = this;
    return {
      get transactionOrderOffset() {
        return store.transactionOrderOffset;
      },
      committed: () => store.notifySubscribers(),
    };
  }

  async readStream(streamId: string): Promise<RecordedEvent[]> {
    const result = await this.pool.query<{ page: string }>({
      name: "ledger-read-stream",
      text: `SELECT ${eventPage("ORDER BY stream_version")} AS page FROM ledger_events WHERE stream_id = $1`,
      values: [streamId],
    });
    return (JSON.parse(result.rows[0]!.page) as EventArray[]).map(fromEventArray);
  }

  async readLastEvent<T extends RecordedEvent["type"] = RecordedEvent["type"]>(
    streamId: string,
    type?: T,
  ): Promise<RecordedEventOf<T> | undefined> {
    const result = await this.pool.query<{ page: string }>({
      name: "ledger-read-last-event",
      // The stream's index read backwards from its head, stopping at the first event of the type.
      text: `SELECT ${eventPage("")} AS page FROM (
               SELECT * FROM ledger_events WHERE stream_id = $1 AND ($2::text IS NULL OR type = $2)
               ORDER BY stream_version DESC LIMIT 1
             ) last_event`,
      values: [streamId, type ?? null],
    });
    const [last] = (JSON.parse(result.rows[0]!.page) as EventArray[]).map(fromEventArray);
    return last as RecordedEventOf<T> | undefined;
  }

  async readStreams(streamIds: readonly string[]): Promise<Map<string, RecordedEvent[]>> {
    const streams = new Map<string, RecordedEvent[]>(streamIds.map((streamId) => [streamId, []]));
    if (streamIds.length === 0) return streams;
    const result = await this.pool.query<{ page: string }>({
      name: "ledger-read-streams",
      // One index probe per stream, whatever the statistics say. Written as `stream_id = ANY($1)` (or as a
      // plain join) the planner scans the whole log when it misjudges how many events a stream holds, as
      // it does until the table's first ANALYZE; OFFSET 0 keeps the per-stream lookup from being flattened.
      text: `SELECT ${eventPage("ORDER BY stream_id, stream_version")} AS page
             FROM (SELECT DISTINCT unnest($1::text[]) AS wanted_stream_id) wanted
             CROSS JOIN LATERAL (
               SELECT * FROM ledger_events WHERE ledger_events.stream_id = wanted.wanted_stream_id OFFSET 0
             ) events`,
      values: [streamIds],
    });
    for (const event of (JSON.parse(result.rows[0]!.page) as EventArray[]).map(fromEventArray)) {
      streams.get(event.streamId)!.push(event);
    }
    return streams;
  }

  async readAll(options: ReadAllOptions): Promise<RecordedEvent[]> {
    const page = await this.readPage("ledger-read-all", eventPage, options);
    return (JSON.parse(page) as EventArray[]).map(fromEventArray);
  }

  async readAllHeads(options: ReadAllOptions): Promise<RecordedEventHead[]> {
    const page = await this.readPage("ledger-read-all-heads", headPage, options);
    return (JSON.parse(page) as HeadArray[]).map(fromHeadArray);
  }

  /**
   * One page of the log as one JSON document: parsing it is several times faster than parsing rows one by one.
   *
   * The position and the limit reach the planner as sub-selects, so that it keeps one plan per connection.
   * Given their values on a log of some thousands of events, it expects few rows after a recent position,
   * judges a plan for those values cheaper than the generic one, and so planned the statement again on
   * almost every call (0.3–0.6 ms a plan, as long as a small page's read); both plans are the same index scan
   * in log order.
   */
  private async readPage(
    name: string,
    pageOf: (order: string) => string,
    options: ReadAllOptions,
  ): Promise<string> {
    const after = options.after ?? logStart;
    const result = await this.pool.query<{ page: string }>({
      name,
      text: `SELECT ${pageOf("ORDER BY transaction_order, position")} AS page
             FROM (
               SELECT * FROM ledger_events
               WHERE (transaction_order, position) > ((SELECT $1::bigint), (SELECT $2::bigint))
                 AND transaction_order < ${visibleTransactionOrderBelow("$3")}
               ORDER BY transaction_order, position
               LIMIT (SELECT $4::bigint)
             ) page`,
      values: [after.commit, after.prepare, this.transactionOrderOffset, options.limit],
    });
    return result.rows[0]!.page;
  }

  readWholeLog(pageSize: number): AsyncIterable<RecordedEvent[]> {
    return copyWholeLog(this.pool, this.transactionOrderOffset, pageSize);
  }

  subscribe(options: SubscribeOptions): Promise<void> {
    return this.follow((read) => this.readAll(read), options);
  }

  subscribeToHeads(options: SubscribeOptions<RecordedEventHead>): Promise<void> {
    return this.follow((read) => this.readAllHeads(read), options);
  }

  private async follow<Item extends { position: LogPosition }>(
    read: (options: ReadAllOptions) => Promise<Item[]>,
    options: SubscribeOptions<Item>,
  ): Promise<void> {
    const listener = await this.notifications();
    let after = options.after;
    while (!options.signal.aborted) {
      const wake = listener.nextWake(this.pollIntervalMs, options.signal);
      const items = await read({ limit: options.batchSizeMax, ...(after ? { after } : {}) });
      if (items.length > 0) {
        wake.cancel();
        await options.handle(items);
        after = items[items.length - 1]!.position;
        continue;
      }
      await wake.promise;
    }
  }

  async close(): Promise<void> {
    await this.listener?.close();
    this.listener = undefined;
  }

  /**
   * At most one NOTIFY per `notifyIntervalMs`: under load, one wake-up serves many appends, and a
   * subscriber reads everything committed by then anyway.
   */
  private notifySubscribers(): void {
    if (this.notifying !== "idle") {
      this.notifying = "sending-then-again";
      return;
    }
    this.notifying = "sending";
    this.pool
      .query({ name: "ledger-notify", text: `SELECT pg_notify('${notificationChannel}', '')` })
      .catch(() => {})
      .finally(() => {
        setTimeout(() => {
          const again = this.notifying === "sending-then-again";
          this.notifying = "idle";
          if (again) this.notifySubscribers();
        }, notifyIntervalMs).unref();
      });
  }

  private async notifications(): Promise<NotificationListener> {
    this.listener ??= await NotificationListener.start(
      this.listenConnectionString,
      notificationChannel,
      this.logger,
    );
    return this.listener;
  }

  /**
   * A single append with expected version "any" that lost its first try: it takes its turn on a lock of
   * the stream held to its commit, and reads the head once its turn has come (a new statement, a new
   * snapshot). A first try takes that lock too, without waiting (the append statement), and inserts nothing
   * while another append is taking its turn, so no append in turn loses to one that races. When a lost race
   * was simply raced again, the losers raced each other: 16 writers appending to one stream lost more than
   * ten times in a row and failed. An append that names its version still races, as before.
   */
  private async insertInTurn(append: StreamAppend, options: AppendBatchOptions): Promise<AppendResult[]> {
    const client = await this.pool.connect();
    try {
      return await inOneTransaction(client, async () => {
        await client.query({
          name: "ledger-append-turn",
          text: "SELECT pg_advisory_xact_lock($1::int, hashtext($2))",
          values: [advisoryLockKeys.anyVersionAppends, append.streamId],
        });
        return this.insert([append], client, options);
      });
    } finally {
      client.release();
    }
  }

  private async insert(
    appends: readonly StreamAppend[],
    client: Pick<pg.ClientBase, "query">,
    { lockWaitMs }: AppendBatchOptions,
  ): Promise<AppendResult[]> {
    const rows = toInsertRows(appends);
    const statements = this.chainInStatement ? chainedAppendStatements : plainAppendStatements;
    const result = await client
      .query<{
        event_id: string;
        stream_id: string;
        stream_version: number;
        transaction_order: string;
        position: string;
      }>(
        lockWaitMs === undefined
          ? { ...statements.waiting, values: [JSON.stringify(rows), this.transactionOrderOffset] }
          : {
              ...statements.bounded,
              values: [JSON.stringify(rows), this.transactionOrderOffset, lockTimeoutSettingOf(lockWaitMs)],
            },
      )
      .catch((error: unknown) => {
        if (lockWaitMs !== undefined && isLockNotAvailable(error))
          throw new RowsLockedError(`an append waited ${lockWaitMs} ms for a row another transaction holds`, {
            cause: error,
          });
        throw error;
      });
    if (result.rows.length !== rows.length) throw new ExpectationNotMet();
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
 * A stream appended with expected version "any" takes its turn without waiting, or the statement inserts
 * nothing: another append is taking its turn on that stream (see insertInTurn). Held to the commit.
 */
const anyVersionTurnTaken = (heads: string) =>
  `pg_try_advisory_xact_lock(${advisoryLockKeys.anyVersionAppends}, hashtext(${heads}.stream_id))`;

/** The append statements' input, `$1`: one row per event. */
const inputColumns = `ordinal int, event_id uuid, stream_id text, index_in_stream int, type text,
  schema_version smallint, data json, metadata json, expected_version int`;

/**
 * The input, and, for a statement bounded in its lock waits, `lock_timeout` set to `$3` for its transaction
 * before anything is locked: the rows are read from the row that sets it (a subquery with a volatile call is
 * never merged into the query around it), and every lock is taken after (the insert's, its triggers').
 */
const inputOf = (bounded: boolean) =>
  bounded
    ? `input AS (
    SELECT input.* FROM (SELECT $1::json AS events, set_config('lock_timeout', $3, true)) settings,
      LATERAL json_to_recordset(settings.events) AS input(${inputColumns})
  )`
    : `input AS (
    SELECT * FROM json_to_recordset($1::json) AS input(${inputColumns})
  )`;

/**
 * One statement appends to many streams: it finds each stream's head, and inserts nothing at all when any
 * expectation fails. The unique (stream_id, stream_version) constraint catches writers that race between
 * reading a head and inserting.
 */
const chainedAppendStatementOf = (bounded: boolean) => ({
  name: bounded ? "ledger-append-within-lock-wait" : "ledger-append",
  text: `
  WITH ${inputOf(bounded)},
  heads AS (
    -- Only a stream's first append in the statement carries an expectation; the rest say "any" (-2).
    SELECT streams.stream_id, streams.expected_version, coalesce(head.stream_version, -1) AS head,
           -- Zeros: no predecessor, or one written before the chain existed (see migration 3).
           coalesce(head.chain_hash, decode(repeat('00', 32), 'hex')) AS head_hash
    FROM (SELECT stream_id, max(expected_version) AS expected_version FROM input GROUP BY stream_id) streams
    LEFT JOIN LATERAL (
      SELECT events.stream_version, events.chain_hash FROM ledger_events events
      WHERE events.stream_id = streams.stream_id ORDER BY events.stream_version DESC LIMIT 1
    ) head ON true
  )
  INSERT INTO ledger_events (transaction_order, event_id, stream_id, stream_version, type, schema_version, data, metadata, chain_hash)
  SELECT pg_current_xact_id()::text::bigint + $2, input.event_id, input.stream_id, heads.head + 1 + input.index_in_stream,
         input.type, input.schema_version, input.data, input.metadata,
         -- A stream's first event here chains to the head just read (the unique (stream, version) key fails
         -- the statement if another writer got there first); the rest are chained by the trigger.
         CASE WHEN input.index_in_stream = 0 THEN ledger_event_hash(heads.head_hash, input.stream_id,
           heads.head + 1, input.event_id, input.type, input.schema_version, input.data, input.metadata) END
  FROM input JOIN heads USING (stream_id)
  -- One condition for the whole statement, not one per row (it is not correlated): all events go in, or none.
  WHERE NOT EXISTS (SELECT 1 FROM heads failed WHERE failed.expected_version NOT IN (${expectedAny}, failed.head)
                    OR (failed.expected_version = ${expectedAny} AND NOT ${anyVersionTurnTaken("failed")}))
  ORDER BY input.ordinal
  RETURNING event_id, stream_id, stream_version, transaction_order, position`,
});

/** The append statement without hashing (as before migration 3): the trigger chains every event. */
const plainAppendStatementOf = (bounded: boolean) => ({
  name: bounded ? "ledger-append-plain-within-lock-wait" : "ledger-append-plain",
  text: `
  WITH ${inputOf(bounded)},
  heads AS (
    SELECT streams.stream_id, streams.expected_version,
           coalesce((SELECT max(events.stream_version) FROM ledger_events events WHERE events.stream_id = streams.stream_id), -1) AS head
    FROM (SELECT stream_id, max(expected_version) AS expected_version FROM input GROUP BY stream_id) streams
  )
  INSERT INTO ledger_events (transaction_order, event_id, stream_id, stream_version, type, schema_version, data, metadata)
  SELECT pg_current_xact_id()::text::bigint + $2, input.event_id, input.stream_id, heads.head + 1 + input.index_in_stream,
         input.type, input.schema_version, input.data, input.metadata
  FROM input JOIN heads USING (stream_id)
  -- One condition for the whole statement, not one per row (it is not correlated): all events go in, or none.
  WHERE NOT EXISTS (SELECT 1 FROM heads failed WHERE failed.expected_version NOT IN (${expectedAny}, failed.head)
                    OR (failed.expected_version = ${expectedAny} AND NOT ${anyVersionTurnTaken("failed")}))
  ORDER BY input.ordinal
  RETURNING event_id, stream_id, stream_version, transaction_order, position`,
});

/** Each append statement as is (waiting for locks as long as the server's settings say) and bounded. */
const chainedAppendStatements = {
  waiting: chainedAppendStatementOf(false),
  bounded: chainedAppendStatementOf(true),
};
const plainAppendStatements = {
  waiting: plainAppendStatementOf(false),
  bounded: plainAppendStatementOf(true),
};

interface InsertRow {
  ordinal: number;
  event_id: string;
  stream_id: string;
  index_in_stream: number;
  type: string;
  schema_version: number;
  data: unknown;
  metadata: unknown;
  expected_version: number;
}

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

/** The statement's input: one JSON document, which PostgreSQL parses faster than eight array parameters. */
function toInsertRows(appends: readonly StreamAppend[]): InsertRow[] {
  const rows: InsertRow[] = [];
  const eventsSoFar = new Map<string, number>();
  for (const append of appends) {
    if (append.events.length === 0) throw new RangeError(`append to ${append.streamId} has no events`);
    const offset = eventsSoFar.get(append.streamId);
    // A later append to a stream already in this statement was checked by canInsertTogether.
    const expected = offset === undefined ? encodeExpectedVersion(append.expectedVersion) : expectedAny;
    append.events.forEach(({ eventId, event }, index) => {
      rows.push({
        ordinal: rows.length,
        event_id: eventId,
        stream_id: append.streamId,
        index_in_stream: (offset ?? 0) + index,
        type: event.type,
        schema_version: writtenSchemaVersionOf(event),
        data: event.data,
        metadata: event.metadata,
        expected_version: expected,
      });
    });
    eventsSoFar.set(append.streamId, (offset ?? 0) + append.events.length);
  }
  return rows;
}

function encodeExpectedVersion(expected: ExpectedVersion): number {
  if (expected === "any") return expectedAny;
  if (expected === "no-stream") return expectedNoStream;
  if (!Number.isInteger(expected) || expected < 0) throw new RangeError(`bad expected version ${expected}`);
  return expected;
}

/**
 * A page of events as one JSON array of arrays, assembled as text: the stored json columns are copied
 * verbatim, which is what makes reading the log (and so rebuilds) fast.
 */
function eventPage(order: string): string {
  const element = `'["' || transaction_order || '","' || position || '","' || event_id || '",' || to_json(stream_id)::text
    || ',' || stream_version || ',' || to_json(type)::text || ',' || schema_version || ',' || data::text
    || ',' || metadata::text || ',' || (extract(epoch FROM recorded_at) * 1000) || ']'`;
  return `'[' || coalesce(string_agg(${element}, ',' ${order}), '') || ']'`;
}

/**
 * A page of event heads (events.ts `EventHead`), as `eventPage` pages events: each event's place, type and
 * the account it touched, read from the field `accountFieldOf` names for its type. Only that field of the
 * data leaves the server.
 */
function headPage(order: string): string {
  const fieldTypes = (field: "owner" | "account") =>
    ledgerEventTypes
      .filter((type) => accountFieldOf[type] === field)
      .map((type) => `'${type}'`)
      .join(", ");
  const account = `CASE WHEN type IN (${fieldTypes("owner")}) THEN data->'owner'
    WHEN type IN (${fieldTypes("account")}) THEN data->'account' END`;
  const element = `'["' || transaction_order || '","' || position || '",' || to_json(type)::text || ','
    || coalesce((${account})::text, 'null') || ']'`;
  return `'[' || coalesce(string_agg(${element}, ',' ${order}), '') || ']'`;
}

type HeadArray = [
  transactionOrder: string,
  position: string,
  type: LedgerEventType,
  account: AccountReference | null,
];

function fromHeadArray([transactionOrder, position, type, account]: HeadArray): RecordedEventHead {
  return {
    type,
    account: account ?? undefined,
    position: { commit: BigInt(transactionOrder), prepare: BigInt(position) },
  };
}

type EventArray = [
  transactionOrder: string,
  position: string,
  eventId: string,
  streamId: string,
  streamVersion: number,
  type: LedgerEventType,
  schemaVersion: number,
  data: unknown,
  metadata: LedgerEvent["metadata"],
  recordedAtMs: number,
];

function fromEventArray(row: EventArray): RecordedEvent {
  const [
    transactionOrder,
    position,
    eventId,
    streamId,
    streamVersion,
    type,
    schemaVersion,
    data,
    metadata,
    recordedAtMs,
  ] = row;
  return {
    type,
    data: upcastEventData(type, schemaVersion, data),
    metadata,
    eventId,
    streamId,
    streamVersion,
    position: { commit: BigInt(transactionOrder), prepare: BigInt(position) },
    recordedAt: new Date(recordedAtMs),
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
    return await inOneTransaction(client, async () => {
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
      return offset;
    });
  } finally {
    client.release();
  }
}

interface Wake {
  promise: Promise<void>;
  cancel(): void;
}

/**
 * One LISTEN connection per store, shared by its subscribers. It reconnects whenever the connection drops
 * and then wakes every subscriber, which reads on from its position: appends notified while it was away
 * are picked up at once, not at the next poll.
 */
class NotificationListener {
  private waiters = new Set<() => void>();
  private connection: ListenConnection | undefined;

  static async start(
    connectionString: string,
    channel: string,
    logger: Logger | undefined,
  ): Promise<NotificationListener> {
    const listener = new NotificationListener();
    listener.connection = await ListenConnection.open({
      connectionString,
      channel,
      applicationName: "ledger-listen",
      onNotification: () => listener.wakeAll(),
      onReconnected: () => listener.wakeAll(),
      logger: logger?.child({ component: "ledger-listen" }),
    });
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
    this.wakeAll();
    await this.connection?.close();
  }

  private wakeAll(): void {
    for (const wake of [...this.waiters]) wake();
  }
}
