import type pg from "pg";
import type { Logger } from "pino";
import { errorSummaryOf, type ThrottledLog, throttledLog } from "../../kernel/throttled-log";

/**
 * The log written off the request path (C10, "where the witness lives"): turns settled hold rows
 * (src/ledger/schema/holds/request-holds.ts) into the ledger's events, many requests per statement — each
 * request's `UsageAuthorized` and its settlement, at versions 0 and 1 of its usage stream, chained in the
 * statement — and deletes the rows in the same transaction, so each hold's money is in its row or in the log,
 * never in both or neither. The events are the ones the row keeps (ids included: its settlement whole, its
 * authorization as columns), so a batch retried after a crash appends the same events.
 *
 * Any number of writers may run, one in every process that settles (each gateway, and the workers for the
 * orphan sweep's settlements): each takes the rows no other writer holds (`SKIP LOCKED`). A writer logs the
 * rows its own process settled by their ids (probes of the primary key); only its poll, for rows no writer
 * was told of (their process died before logging them), scans the table for settled rows. A batch's commit
 * does not wait for its WAL flush: the rows are durable already, and a commit lost in a crash loses its
 * whole transaction — the rows come back and are logged again — and every commit after it.
 *
 * The charges of the recorded usages are enqueued once their batch has committed; a process that dies in
 * between leaves them to the pending-charge sweep, as any lost enqueue.
 */

export interface SettledHoldsLogOptions {
  pool: Pick<pg.Pool, "query">;
  /** The PostgreSQL event store's `appendsBeside`: its transaction order offset, and the subscribers' nudge. */
  log: { readonly transactionOrderOffset: bigint; committed(): void };
  enqueueCharges: (requestIds: readonly string[]) => void;
  /** Told how many rows each batch removed (hold-rows-vacuum.ts). */
  vacuum: { removed(rows: number): void };
  logger: Logger;
  /** Rows logged by one statement. */
  batchSizeMax: number;
  /** How often settled rows no writer was told of (their process died first) are looked for, by a scan. */
  pollIntervalMs: number;
  /** How long a write asked for by `settled` waits for more settlements to join it. */
  lingerMs: number;
}

export class SettledHoldsLog {
  private timer: NodeJS.Timeout | undefined;
  private poller: NodeJS.Timeout | undefined;
  private writing: Promise<void> | undefined;
  private writeAgain = false;
  private closed = false;
  /** Rows this process settled, to log by id; `scan`: look for settled rows no writer was told of too. */
  private readonly settledHere = new Set<string>();
  private scan = false;
  private readonly errors: ThrottledLog;

  constructor(private readonly options: SettledHoldsLogOptions) {
    this.errors = throttledLog(options.logger, 5_000);
  }

  start(): void {
    this.poller = setInterval(() => {
      this.scan = true;
      this.write();
    }, this.options.pollIntervalMs);
    this.poller.unref();
  }

  /** This process settled the request's row: log it after the linger (with whatever settles meanwhile). */
  settled(requestId: string): void {
    // Bounded: past it (the database away for long), the ids are forgotten and the next write scans instead.
    if (this.settledHere.size >= this.options.batchSizeMax * 100) {
      this.settledHere.clear();
      this.scan = true;
    }
    this.settledHere.add(requestId);
    this.write();
  }

  private write(): void {
    if (this.closed) return;
    if (this.writing) {
      this.writeAgain = true;
      return;
    }
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.writing = this.writeAll().finally(() => {
        this.writing = undefined;
        if (this.writeAgain) {
          this.writeAgain = false;
          this.write();
        }
      });
    }, this.options.lingerMs);
    this.timer.unref();
  }

  /** Logs every settled row now (a stop's last flush, tests); resolves when none is left or a write failed. */
  async flush(): Promise<void> {
    await this.writing;
    this.scan = true;
    await this.writeAll();
  }

  /** `flush`, given up after `timeoutMs` (the database away at a stop): the rows stay for another writer. */
  async flushWithin(timeoutMs: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      this.flush(),
      new Promise((resolve) => {
        timer = setTimeout(resolve, timeoutMs);
      }),
    ]);
    clearTimeout(timer);
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    clearInterval(this.poller);
    await this.writing;
  }

  /**
   * This process's settled rows by id, then — on a poll — any others, batch by batch until one is not full.
   * A failure is logged; the ids stay for the next write, and the poll finds whatever is left.
   */
  private async writeAll(): Promise<void> {
    const scan = this.scan;
    this.scan = false;
    try {
      while (this.settledHere.size > 0 && !this.closed) {
        const requestIds = [...this.settledHere].slice(0, this.options.batchSizeMax);
        await this.writeBatch(requestIds);
        for (const requestId of requestIds) this.settledHere.delete(requestId);
      }
      if (scan) while ((await this.writeBatch()) === this.options.batchSizeMax && !this.closed) {}
      this.errors.recovered("logging settled holds works again");
    } catch (error) {
      this.errors.error({ err: errorSummaryOf(error) }, "logging settled holds failed; retrying");
    }
  }

  /**
   * One batch: the settled rows of `requestIds` (those another writer holds or logged are skipped), or any
   * settled rows when none are named. Answers how many rows it took.
   */
  async writeBatch(requestIds?: readonly string[]): Promise<number> {
    const result = await this.options.pool.query<{
      request_id: string;
      settlement_type: string;
      logged: boolean;
    }>({
      name: requestIds ? "log-settled-holds-by-id" : "log-settled-holds",
      text: requestIds ? logSettledHoldsByIdStatement : logSettledHoldsStatement,
      values: [
        this.options.batchSizeMax,
        this.options.log.transactionOrderOffset,
        ...(requestIds ? [requestIds] : []),
      ],
    });
    const logged = result.rows.filter((row) => row.logged);
    if (logged.length > 0) {
      this.options.log.committed();
      this.options.vacuum.removed(logged.length);
    }
    const recorded = logged.filter((row) => row.settlement_type === "UsageRecorded");
    if (recorded.length > 0) this.options.enqueueCharges(recorded.map((row) => row.request_id));
    const stuck = result.rows.filter((row) => !row.logged);
    if (stuck.length > 0)
      this.errors.error(
        { requestIds: stuck.map((row) => row.request_id) },
        "these settled holds' usage streams are already in the log; their rows are kept for an operator",
      );
    return result.rows.length;
  }
}

/**
 * One statement, its own transaction: takes settled rows no other writer holds (those `named`, or any),
 * appends each one's hold and settlement (a stream already in the log — a request id used twice — is left
 * with its row), deletes the rows logged, and answers each row taken. The chain links are computed here (a
 * stream's first two events, from the zero hash), not by the chain's row trigger: a lookup per event would cost
 * more than the insert. Whether a stream is in the log is one probe of its key per row (LIMIT keeps it a probe:
 * as a plain EXISTS the planner may hash the whole log).
 */
const logSettledHoldsStatementOf = (named: string) => `
  WITH taken AS (
    SELECT holds.request_id, 'usage-' || holds.request_id AS stream_id, ledger_hold_authorization(holds) AS held,
           ledger_hold_settlement(holds) AS settled, holds.settled_at
    FROM request_holds holds
    WHERE holds.settled_at IS NOT NULL AND ${named}
    ORDER BY holds.settled_at
    LIMIT $1
    FOR UPDATE SKIP LOCKED
  ), loggable AS (
    SELECT taken.*, logged.stream_id IS NULL AS fresh
    FROM taken
    LEFT JOIN LATERAL (
      SELECT events.stream_id FROM ledger_events events
      WHERE events.stream_id = taken.stream_id AND events.stream_version = 0
      LIMIT 1
    ) logged ON true
  ), events AS (
    -- Each event's fields once, its data and metadata as the json text stored and hashed.
    SELECT loggable.request_id, loggable.stream_id, loggable.settled_at, event.version,
           (event.body->>'eventId')::uuid AS event_id, event.body->>'type' AS type,
           (event.body->>'schemaVersion')::smallint AS schema_version, (event.body->'data')::json AS data,
           (event.body->'metadata')::json AS metadata
    FROM loggable
    CROSS JOIN LATERAL (VALUES (0, loggable.held), (1, loggable.settled)) AS event(version, body)
    WHERE loggable.fresh
  ), chained AS (
    SELECT held.*, ledger_event_hash(decode(repeat('00', 32), 'hex'), held.stream_id, 0, held.event_id, held.type,
             held.schema_version, held.data, held.metadata) AS hash
    FROM events held WHERE held.version = 0
  ), appended AS (
    INSERT INTO ledger_events (transaction_order, event_id, stream_id, stream_version, type, schema_version, data,
                               metadata, chain_hash)
    SELECT pg_current_xact_id()::text::bigint + $2, linked.event_id, linked.stream_id, linked.version, linked.type,
           linked.schema_version, linked.data, linked.metadata, linked.hash
    FROM (
      SELECT chained.request_id, chained.settled_at, chained.version, chained.event_id, chained.stream_id,
             chained.type, chained.schema_version, chained.data, chained.metadata, chained.hash
      FROM chained
      UNION ALL
      SELECT settled.request_id, settled.settled_at, settled.version, settled.event_id, settled.stream_id,
             settled.type, settled.schema_version, settled.data, settled.metadata,
             ledger_event_hash(chained.hash, settled.stream_id, 1, settled.event_id, settled.type,
               settled.schema_version, settled.data, settled.metadata)
      FROM events settled JOIN chained USING (request_id)
      WHERE settled.version = 1
    ) linked
    ORDER BY linked.settled_at, linked.request_id, linked.version
  ), removed AS (
    -- The ids as one array: probes of the primary key, whatever the planner guesses of the table.
    DELETE FROM request_holds holds WHERE holds.request_id = ANY (ARRAY(SELECT chained.request_id FROM chained))
  )
  SELECT loggable.request_id, loggable.settled->>'type' AS settlement_type, loggable.fresh AS logged
  FROM loggable, (SELECT set_config('synchronous_commit', 'off', true)) commit_setting`;

const logSettledHoldsStatement = logSettledHoldsStatementOf("true");
const logSettledHoldsByIdStatement = logSettledHoldsStatementOf("holds.request_id = ANY ($3::text[])");
