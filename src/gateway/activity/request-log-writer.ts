import type pg from "pg";
import type { Logger } from "pino";
import { advisoryLockKeys } from "../../database/advisory-lock-keys";
import { errorSummaryOf, type ThrottledLog, throttledLog } from "../../kernel/throttled-log";
import type { RequestLogEntry } from "./request-log-entry";
import { requestLogMetrics } from "./request-log-metrics";

/**
 * Writes the request log off the request path: a request only pushes its row onto a bounded queue; one
 * multi-row INSERT per process takes the queue every `flushIntervalMs`, or at once when `batchRowsMax` rows
 * wait. At most one INSERT is in flight. A full queue drops the row and a failed INSERT drops its batch,
 * both counted in `won_gateway_request_log_rows_total{result="dropped"}`: the log is for people reading
 * their activity, and never worth a slower or refused request.
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
  readonly statistics: RequestLogWriterStatistics = { rowsWritten: 0, rowsDropped: 0, batchesWritten: 0 };

  constructor(private readonly options: RequestLogWriterOptions) {
    if (options.batchRowsMax < 1 || options.queueRowsMax < options.batchRowsMax)
      throw new Error("request log: the queue must hold at least one batch");
    // A database outage fails every batch: one line per half minute says so.
    this.failureLog = throttledLog(options.logger, 30_000);
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

  private async flushBatch(): Promise<void> {
    const batch = this.queue.splice(0, this.options.batchRowsMax);
    if (batch.length === 0) return;
    try {
      await this.options.database.query({
        name: "request-log-insert",
        text: insertText,
        values: [JSON.stringify(batch.map(rowOf))],
      });
      this.statistics.rowsWritten += batch.length;
      this.statistics.batchesWritten += 1;
      requestLogMetrics.written(batch.length);
    } catch (error) {
      this.drop(batch.length);
      this.failureLog.error(
        { err: errorSummaryOf(error), rows: batch.length },
        "writing the request log failed; the batch is dropped",
      );
    }
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
