import type pg from "pg";
import type { Logger } from "pino";
import { errorSummaryOf, type ThrottledLog, throttledLog } from "../../kernel/throttled-log";

/**
 * The log written off the request path (C10, "where the witness lives"): turns settled hold rows
 * (src/ledger/schema/holds/request-holds.ts) into the ledger's events, many requests per statement — each
 * request's `UsageAuthorized` and its settlement, at versions 0 and 1 of its usage stream, chained in the
 * statement — and deletes the rows in the same transaction, so each hold's money is in its row or in the log,
 * never in both or neither. The events are the very ones the row keeps (ids included), so a batch retried
 * after a crash appends the same events.
 *
 * Any number of writers may run, one in every process that settles (each gateway, and the workers for the
 * orphan sweep's settlements): each takes the rows no other writer holds (`SKIP LOCKED`). A batch's commit
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
  logger: Logger;
  /** Rows logged by one statement. */
  batchSizeMax: number;
  /** How often rows settled elsewhere (another process, the orphan sweep) are looked for. */
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
  private readonly errors: ThrottledLog;

  constructor(private readonly options: SettledHoldsLogOptions) {
    this.errors = throttledLog(options.logger, 5_000);
  }

  start(): void {
    this.poller = setInterval(() => this.settled(), this.options.pollIntervalMs);
    this.poller.unref();
  }

  /** Rows were settled: log them after the linger (with whatever settles meanwhile). */
  settled(): void {
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
          this.settled();
        }
      });
    }, this.options.lingerMs);
    this.timer.unref();
  }

  /** Logs every settled row now (a stop's last flush, tests); resolves when none is left or a write failed. */
  async flush(): Promise<void> {
    await this.writing;
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

  /** Batches until one is not full; a failure is logged and left to the next kick or poll. */
  private async writeAll(): Promise<void> {
    try {
      while ((await this.writeBatch()) === this.options.batchSizeMax && !this.closed) {}
    } catch (error) {
      this.errors.error({ err: errorSummaryOf(error) }, "logging settled holds failed; retrying");
    }
  }

  /** One batch; answers how many rows it took. */
  async writeBatch(): Promise<number> {
    const result = await this.options.pool.query<{
      request_id: string;
      settlement_type: string;
      logged: boolean;
    }>({
      name: "log-settled-holds",
      text: logSettledHoldsStatement,
      values: [this.options.batchSizeMax, this.options.log.transactionOrderOffset],
    });
    const logged = result.rows.filter((row) => row.logged);
    if (logged.length > 0) this.options.log.committed();
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
 * One statement, its own transaction: takes settled rows no other writer holds, appends each one's hold and
 * settlement (a stream already in the log — a request id used twice — is left with its row), deletes the
 * rows logged, and answers each row taken. The chain links are computed here (a stream's first two events,
 * from the zero hash), not by the chain's row trigger: a lookup per event would cost more than the insert.
 */
const logSettledHoldsStatement = `
  WITH taken AS (
    SELECT holds.request_id, 'usage-' || holds.request_id AS stream_id, holds.authorization_event AS held,
           holds.settlement_event AS settled, holds.settled_at
    FROM request_holds holds
    WHERE holds.settled_at IS NOT NULL
    ORDER BY holds.settled_at
    LIMIT $1
    FOR UPDATE SKIP LOCKED
  ), loggable AS (
    SELECT taken.*, NOT EXISTS (SELECT 1 FROM ledger_events logged WHERE logged.stream_id = taken.stream_id) AS fresh
    FROM taken
  ), held_chained AS (
    SELECT loggable.*, ledger_event_hash(decode(repeat('00', 32), 'hex'), loggable.stream_id, 0,
             (loggable.held->>'eventId')::uuid, loggable.held->>'type', (loggable.held->>'schemaVersion')::smallint,
             loggable.held->'data', loggable.held->'metadata') AS held_hash
    FROM loggable WHERE loggable.fresh
  ), chained AS (
    SELECT held_chained.*, ledger_event_hash(held_chained.held_hash, held_chained.stream_id, 1,
             (held_chained.settled->>'eventId')::uuid, held_chained.settled->>'type',
             (held_chained.settled->>'schemaVersion')::smallint, held_chained.settled->'data',
             held_chained.settled->'metadata') AS settled_hash
    FROM held_chained
  ), appended AS (
    INSERT INTO ledger_events (transaction_order, event_id, stream_id, stream_version, type, schema_version, data,
                               metadata, chain_hash)
    SELECT pg_current_xact_id()::text::bigint + $2, (event.body->>'eventId')::uuid, chained.stream_id, event.version,
           event.body->>'type', (event.body->>'schemaVersion')::smallint, event.body->'data', event.body->'metadata',
           event.hash
    FROM chained
    CROSS JOIN LATERAL (VALUES (0, chained.held, chained.held_hash), (1, chained.settled, chained.settled_hash))
      AS event(version, body, hash)
    ORDER BY chained.settled_at, chained.request_id, event.version
  ), removed AS (
    DELETE FROM request_holds holds USING chained WHERE holds.request_id = chained.request_id
  )
  SELECT loggable.request_id, loggable.settled->>'type' AS settlement_type, loggable.fresh AS logged
  FROM loggable, (SELECT set_config('synchronous_commit', 'off', true)) commit_setting`;
