import type pg from "pg";
import type { Logger } from "pino";

/**
 * The holds of this gateway process's requests in flight, renewed, and their output so far recorded, every
 * `progressIntervalMs` in one statement for all of them (C10's last point). The orphan sweep then never
 * settles a running request's hold however long it runs, and a request whose process dies is billed for
 * the output counted at its last record. Nothing is written while no request is in flight.
 *
 * The row is operational state (declared in src/ledger/schema/holds/hold-progress.ts): the money it
 * justifies is written into the ledger by the settlement that reads it.
 */

export interface HoldProgressOptions {
  pool: Pick<pg.Pool, "query">;
  gatewayInstance: string;
  progressIntervalMs: number;
  /** A renewal makes the hold good for this long from the moment it is recorded. */
  holdLifetimeMs: number;
  logger: Logger;
}

/** What a request in flight tells about itself: its output so far, in tokens (0 for a JSON answer). */
export type OutputTokensSoFar = () => number;

export class HoldProgress {
  private readonly inFlight = new Map<string, OutputTokensSoFar>();
  private timer: NodeJS.Timeout | undefined;
  private recording: Promise<void> | undefined;
  private failing = false;

  constructor(private readonly options: HoldProgressOptions) {}

  /** From the hold's placement to its settlement; the returned function ends the tracking. */
  track(requestId: string, outputTokensSoFar: OutputTokensSoFar): () => void {
    this.inFlight.set(requestId, outputTokensSoFar);
    return () => this.inFlight.delete(requestId);
  }

  get inFlightCount(): number {
    return this.inFlight.size;
  }

  start(): void {
    this.timer ??= setInterval(() => {
      // One record at a time: a slow database never piles statements up.
      this.recording ??= this.record().finally(() => {
        this.recording = undefined;
      });
    }, this.options.progressIntervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.recording;
  }

  /** Writes one record now (the interval does this on its own; tests and shutdown call it directly). */
  async record(): Promise<void> {
    if (this.inFlight.size === 0) return;
    const requests = [...this.inFlight].map(([requestId, outputTokensSoFar]) => ({
      request_id: requestId,
      output_tokens: outputTokensSoFar(),
    }));
    try {
      await this.options.pool.query({
        name: "hold-progress",
        text: `INSERT INTO hold_progress AS progress (request_id, gateway_instance, output_tokens, renewed_until,
                 recorded_at)
               SELECT request.request_id, $1, request.output_tokens,
                      now() + make_interval(secs => $2 / 1000.0), now()
               FROM json_to_recordset($3::json) AS request(request_id text, output_tokens integer)
               ORDER BY request.request_id
               ON CONFLICT (request_id) DO UPDATE SET output_tokens = excluded.output_tokens,
                 renewed_until = excluded.renewed_until, recorded_at = excluded.recorded_at`,
        values: [this.options.gatewayInstance, this.options.holdLifetimeMs, JSON.stringify(requests)],
      });
      if (this.failing) this.options.logger.info("recording the progress of requests in flight again");
      this.failing = false;
    } catch (error) {
      // The next interval tries again; the sweep waits out a database outage before it judges anyone.
      if (!this.failing)
        this.options.logger.error({ err: error }, "recording the progress of requests in flight failed");
      this.failing = true;
    }
  }
}
