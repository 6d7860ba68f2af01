import type pg from "pg";
import type { Logger } from "pino";
import { advisoryLockKeys } from "../../database/advisory-lock-keys";
import { dataErrorSummaryOf, isDataError } from "../../database/sql-state";
import { assert } from "../../kernel/assert";
import { errorSummaryOf, type ThrottledLog, throttledLog } from "../../kernel/throttled-log";
import type { RequestLogEntry } from "./request-log-entry";
import { requestLogMetrics } from "./request-log-metrics";

/**
 * Writes the request log off the request path: a request only pushes its row onto a bounded queue; one
 * multi-row INSERT per process takes the queue every `flushIntervalMs`, or at once when `batchRowsMax` rows
 * wait. At most one INSERT is in flight. A full queue drops the row. An INSERT the database fails (away,
 * refusing connections, the statement cancelled) drops its batch, as it would fail every row. An INSERT that
 * fails on one row's data (SQLSTATE class 22 or 23: a value out of its column's range, say) is written again
 * in halves until only the rows the table refuses are dropped, each logged by request id: one such row must
 * not take the other requests' rows with it. Every dropped row is counted in
 * `won_gateway_request_log_rows_total{result="dropped"}`: the log is for people reading their activity, and
 * never worth a slower or refused request.
 *
 * Every `pruneIntervalMs` it also deletes up to `pruneRowsMax` rows older than the retention, so the table
 * stays bounded; with several gateway processes, one prunes at a time (a transaction-scoped advisory lock).
 */

export interface RequestLogWriterOptions {
  database: Pick<pg.Pool, "query" | "connect">;
  flushIntervalMs: number;
  batchRowsMax: number;
  queueRowsMax: number;
  retention: { days: number; pruneIntervalMs: number; pruneRowsMax: number };
  logger: Logger;
}

export interface RequestLogWriterStatistics {
  rowsWritten: number;
  rowsDropped: number;
  batchesWritten: number;
}

/** How many dropped rows one log line names; the rest are counted in its `rows`. */
const refusedRowsLoggedMax = 20;

const insertText = `
  INSERT INTO request_log (request_id, started_at, account_kind, account_id, key_id, key_preview, model, endpoint,
    streamed, http_status, outcome, latency_ms, time_to_first_token_ms, input_tokens, cached_tokens, output_tokens,
    reasoning_tokens, error_type, response_id, answered_by)
  SELECT * FROM json_to_recordset($1::json) AS row(request_id text, started_at timestamptz, account_kind text,
    account_id text, key_id uuid, key_preview text, model text, endpoint text, streamed boolean, http_status smallint,
    outcome text, latency_ms double precision, time_to_first_token_ms double precision, input_tokens integer,
    cached_tokens integer, output_tokens integer, reasoning_tokens integer, error_type text, response_id text,
    answered_by text)
  -- A request id is minted once per request; a batch retried after a lost answer writes nothing twice.
  ON CONFLICT (request_id) DO NOTHING`;

export class RequestLogWriter {
  private queue: RequestLogEntry[] = [];
  private flushing: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private pruneTimer: NodeJS.Timeout | undefined;
  private closed = false;
  private readonly failureLog: ThrottledLog;
  private readonly refusedRowsLog: ThrottledLog;
  readonly statistics: RequestLogWriterStatistics = { rowsWritten: 0, rowsDropped: 0, batchesWritten: 0 };

  constructor(private readonly options: RequestLogWriterOptions) {
    if (options.batchRowsMax < 1 || options.queueRowsMax < options.batchRowsMax)
      throw new Error("request log: the queue must hold at least one batch");
    // A database outage fails every batch: one line per half minute says so.
    this.failureLog = throttledLog(options.logger, 30_000);
    // Throttled on its own, so that an outage's line never hides which requests' rows the table refused.
    this.refusedRowsLog = throttledLog(options.logger, 30_000);
  }

  start(): void {
    this.timer = setInterval(() => this.flushSoon(), this.options.flushIntervalMs);
    this.timer.unref();
    this.pruneTimer = setInterval(() => {
      this.prune(new Date()).catch((error: unknown) =>
        this.failureLog.error({ err: errorSummaryOf(error) }, "pruning the request log failed"),
      );
    }, this.options.retention.pruneIntervalMs);
    this.pruneTimer.unref();
  }

  /** Deletes up to `pruneRowsMax` rows older than the retention; the number deleted (0 if another pruned). */
  async prune(now: Date): Promise<number> {
    const before = new Date(now.getTime() - this.options.retention.days * 24 * 60 * 60_000);
    const client = await this.options.database.connect();
    try {
      await client.query("BEGIN");
      const locked = await client.query<{ locked: boolean }>(
        "SELECT pg_try_advisory_xact_lock($1) AS locked",
        [advisoryLockKeys.requestLogPrune],
      );
      let deleted = 0;
      if (locked.rows[0]?.locked) {
        const result = await client.query(
          `DELETE FROM request_log WHERE request_id IN (
             SELECT request_id FROM request_log WHERE started_at < $1 ORDER BY started_at LIMIT $2)`,
          [before.toISOString(), this.options.retention.pruneRowsMax],
        );
        deleted = result.rowCount ?? 0;
      }
      await client.query("COMMIT");
      return deleted;
    } catch (error) {
      await client.query("ROLLBACK").catch(() => {});
      throw error;
    } finally {
      client.release();
    }
  }

  /** Queues one row; never waits and never throws. */
  write(entry: RequestLogEntry): void {
    if (this.closed || this.queue.length >= this.options.queueRowsMax) {
      this.drop(1);
      return;
    }
    this.queue.push(entry);
    if (this.queue.length >= this.options.batchRowsMax) this.flushSoon();
  }

  /** Writes every queued row (batch by batch), then takes no more. */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    clearInterval(this.pruneTimer);
    while (this.flushing || this.queue.length > 0) {
      await (this.flushing ?? this.flushBatch());
    }
  }

  private flushSoon(): void {
    if (this.flushing || this.queue.length === 0) return;
    this.flushing = this.flushBatch().finally(() => {
      this.flushing = undefined;
      // More than a batch waited: take the next at once rather than at the next tick of the timer.
      if (this.queue.length >= this.options.batchRowsMax) this.flushSoon();
    });
  }

  /**
   * Writes one batch. On a data error the rows are written again in halves, a half that fails again in
   * halves, down to single rows, which are dropped. Halving rather than row by row keeps the cost near the
   * batch's size: one bad row in 500 costs 2 × ⌈log2 500⌉ = 18 more INSERTs (not 500), k bad rows at most
   * k times that, and a batch never more than 2n − 1 INSERTs in all, one at a time. Any other error drops
   * every row not yet written, without another attempt: it would fail them all.
   */
  private async flushBatch(): Promise<void> {
    const batch = this.queue.splice(0, this.options.batchRowsMax);
    const refused: { requestId: string; err: ReturnType<typeof dataErrorSummaryOf> }[] = [];
    const pending: RequestLogEntry[][] = batch.length > 0 ? [batch] : [];
    for (let inserts = 0; pending.length > 0; inserts++) {
      assert(inserts < 2 * batch.length, "a batch is written in at most 2n - 1 INSERTs");
      const rows = pending.pop()!;
      const failure = await this.insert(rows);
      if (failure === undefined) continue;
      const { error } = failure;
      if (!isDataError(error)) {
        const unwritten = rows.length + pending.reduce((sum, part) => sum + part.length, 0);
        this.drop(unwritten);
        this.failureLog.error(
          { err: errorSummaryOf(error), rows: unwritten },
          "writing the request log failed; the batch is dropped",
        );
        break;
      }
      if (rows.length === 1) {
        this.drop(1);
        refused.push({ requestId: rows[0]!.requestId, err: dataErrorSummaryOf(error) });
        continue;
      }
      // The first half is written first: popped last-in, first-out.
      const middle = Math.ceil(rows.length / 2);
      pending.push(rows.slice(middle), rows.slice(0, middle));
    }
    if (refused.length > 0)
      this.refusedRowsLog.error(
        { rows: refused.length, dropped: refused.slice(0, refusedRowsLoggedMax) },
        "the request log table refused rows of a batch; they are dropped",
      );
  }

  /** One INSERT of `rows`; the error it failed with, if it did. */
  private async insert(rows: RequestLogEntry[]): Promise<{ error: unknown } | undefined> {
    try {
      await this.options.database.query({
        name: "request-log-insert",
        text: insertText,
        values: [JSON.stringify(rows.map(rowOf))],
      });
    } catch (error) {
      return { error };
    }
    this.statistics.rowsWritten += rows.length;
    this.statistics.batchesWritten += 1;
    requestLogMetrics.written(rows.length);
    return undefined;
  }

  private drop(rows: number): void {
    this.statistics.rowsDropped += rows;
    requestLogMetrics.dropped(rows);
  }
}

function rowOf(entry: RequestLogEntry) {
  return {
    request_id: entry.requestId,
    started_at: entry.startedAt.toISOString(),
    account_kind: entry.account.kind,
    account_id: entry.account.id,
    key_id: entry.keyId,
    key_preview: entry.keyPreview,
    model: entry.model,
    endpoint: entry.endpoint,
    streamed: entry.streamed,
    http_status: entry.httpStatus,
    outcome: entry.outcome,
    latency_ms: entry.latencyMs,
    time_to_first_token_ms: entry.timeToFirstTokenMs,
    input_tokens: entry.tokens?.input ?? null,
    cached_tokens: entry.tokens?.cached ?? null,
    output_tokens: entry.tokens?.output ?? null,
    reasoning_tokens: entry.tokens?.reasoning ?? null,
    error_type: entry.errorType,
    response_id: entry.responseId,
    answered_by: entry.answeredBy,
  };
}
