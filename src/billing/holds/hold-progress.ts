import type pg from "pg";
import type { Logger } from "pino";
import { assert } from "../../kernel/assert";
import type { ReportedInput } from "../../providers/provider";

/**
 * The holds of this gateway process's requests in flight, renewed, and their output so far, the input their
 * upstream reported and the model answering them recorded, every `progressIntervalMs` in one statement for
 * all of them (C10's last point). The orphan sweep then never settles a running request's hold however long
 * it runs, and a request whose process dies is billed for the output counted at its last record, for the
 * input and cached input its upstream reported before the stream's end (messages' `message_start`,
 * generateContent's chunks) where it did, and as the configured fallback answering it where one had begun
 * to (C13), as the gateway itself bills a stream cut short. Nothing is written while no request is in
 * flight.
 *
 * The same statement answers which of those holds are no longer open: settled by the orphan sweep, which
 * presumed this process dead (paused, or cut off from the database, past its judgement). Their requests are
 * cut (`onReleased`), and no request delivers output on a confirmation older than the sweep could take to
 * judge (`stillHeld`): what a released hold no longer covers is never served, so the overdraft stays bounded.
 *
 * Nor while this process is without its session (gateway-session.ts; `sessionLost` until `sessionTaken`): the
 * sweep keeps nothing back for a gateway whose session is gone (swept-hold-reserves.ts), so what it delivered
 * past its last record would be billed, if the sweep judged it dead meanwhile, on money spent elsewhere. Its
 * requests' output waits until the session is taken again and a record after that confirms their holds.
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
  /**
   * How long a hold's last confirmation (its placement, or a record that found it open) lets output flow
   * without another (settlementTimings' `holdConfirmationMaxAgeMs`): less than the sweep could take to
   * judge this process dead and release it.
   */
  confirmationMaxAgeMs: number;
  logger: Logger;
  /** Monotonic milliseconds (tests pass their own). */
  nowMs?: () => number;
}

/** What a request in flight tells about itself, asked at each record. */
export interface RequestProgress {
  /** Its output so far, in tokens (0 for a JSON answer). */
  outputTokens: number;
  /**
   * The input its upstream has reported, with its cached part; null while it has reported none (a
   * chat-completions or responses stream reports usage only at its end; a JSON answer, with its answer).
   */
  reportedInput: ReportedInput | null;
  /**
   * The configured fallback answering it, once one has begun to (C13): what its usage is priced and named
   * as. Null while the model requested answers, or none has begun yet.
   */
  answeringModel: string | null;
}

export type ProgressSoFar = () => RequestProgress;

interface TrackedRequest {
  progressSoFar: ProgressSoFar;
  /** Called once, when a record finds the hold released: the sweep settled it, presuming this process dead. */
  onReleased: () => void;
  /** When the hold was last known open: its placement, then each record that found it so. */
  confirmedAtMs: number;
}

/** A record that failed leaves the requests waiting for confirmation to try again this soon. */
const confirmationRetryMs = 250;

export class HoldProgress {
  private readonly inFlight = new Map<string, TrackedRequest>();
  private timer: NodeJS.Timeout | undefined;
  private recording: Promise<void> | undefined;
  private failing = false;
  /** Since when this process has been without its session (clockMs); undefined while it has it. */
  private withoutSessionSinceMs: number | undefined;
  /** When the session was last taken again (clockMs): only a record sent after it confirms a hold. */
  private sessionTakenAtMs = Number.NEGATIVE_INFINITY;
  private readonly nowMs: () => number;

  constructor(private readonly options: HoldProgressOptions) {
    this.nowMs = options.nowMs ?? (() => performance.now());
  }

  /** This process's monotonic clock, the one confirmations are timed on. */
  clockMs(): number {
    return this.nowMs();
  }

  /**
   * From the hold's placement to its settlement; the returned function ends the tracking. `placedAskedAtMs`
   * (clockMs) is its first confirmation: when the statement that placed it was asked for, so that a process
   * paused between the statement and its answer does not count the hold as confirmed after the pause.
   * `onReleased` is called if a record finds the hold released.
   */
  track(
    requestId: string,
    progressSoFar: ProgressSoFar,
    onReleased: () => void,
    placedAskedAtMs: number,
  ): () => void {
    // Placed while this process is without its session: not a confirmation output may flow on.
    const confirmedAtMs =
      this.withoutSessionSinceMs === undefined ? placedAskedAtMs : Number.NEGATIVE_INFINITY;
    const tracked = { progressSoFar, onReleased, confirmedAtMs };
    this.inFlight.set(requestId, tracked);
    return () => {
      if (this.inFlight.get(requestId) === tracked) this.inFlight.delete(requestId);
    };
  }

  get inFlightCount(): number {
    return this.inFlight.size;
  }

  /**
   * Whether the request may deliver more output: true at once while its hold's last confirmation is recent
   * (every request, between records, on a process that reaches the database); else a promise of the next
   * record's answer, retried while the database is away (output waits; an outage proves nothing), false
   * once the hold is found released or the request is no longer tracked. A process paused or cut off from
   * the database past the sweep's judgement thus delivers nothing its hold no longer covers (C10).
   */
  stillHeld(requestId: string): true | Promise<boolean> {
    const tracked = this.inFlight.get(requestId);
    if (tracked !== undefined && this.nowMs() - tracked.confirmedAtMs <= this.options.confirmationMaxAgeMs)
      return true;
    return this.confirm(requestId);
  }

  private async confirm(requestId: string): Promise<boolean> {
    for (;;) {
      const tracked = this.inFlight.get(requestId);
      if (tracked === undefined) return false;
      if (this.nowMs() - tracked.confirmedAtMs <= this.options.confirmationMaxAgeMs) return true;
      await this.recordOnce();
      if (this.failing || this.withoutSessionSinceMs !== undefined)
        await new Promise((resolve) => setTimeout(resolve, confirmationRetryMs));
    }
  }

  /** This process lost its session: no hold counts as confirmed until it is taken again and a record says so. */
  sessionLost(): void {
    this.withoutSessionSinceMs ??= this.nowMs();
    for (const tracked of this.inFlight.values()) tracked.confirmedAtMs = Number.NEGATIVE_INFINITY;
  }

  /** This process has its session again: the next record confirms the holds it finds open. */
  sessionTaken(): void {
    if (this.withoutSessionSinceMs === undefined) return;
    this.withoutSessionSinceMs = undefined;
    this.sessionTakenAtMs = this.nowMs();
  }

  start(): void {
    this.timer ??= setInterval(() => void this.recordOnce(), this.options.progressIntervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.recording;
  }

  /** One record at a time: a slow database never piles statements up, and a caller joins the one running. */
  private recordOnce(): Promise<void> {
    this.recording ??= this.record().finally(() => {
      this.recording = undefined;
    });
    return this.recording;
  }

  /**
   * Writes one record now (the interval does this on its own; tests and shutdown call it directly): renews
   * every hold in flight, records its output so far, the input its upstream reported (null: none yet) and the
   * fallback answering it (null: the model requested), and learns which holds are no longer open.
   */
  async record(): Promise<void> {
    if (this.inFlight.size === 0) return;
    const sentAtMs = this.nowMs();
    const snapshot = [...this.inFlight];
    const requests = snapshot.map(([requestId, tracked]) => {
      const { outputTokens, reportedInput, answeringModel } = tracked.progressSoFar();
      // The table refuses an empty name, and a statement refused would renew none of this process's holds.
      assert(answeringModel !== "", `the progress of ${requestId} names an empty answering model`);
      return {
        request_id: requestId,
        output_tokens: outputTokens,
        input_tokens: reportedInput === null ? null : reportedInput.inputTokens,
        cached_input_tokens: reportedInput === null ? null : reportedInput.cachedInputTokens,
        answering_model: answeringModel,
      };
    });
    let released: Set<string>;
    try {
      const result = await this.options.pool.query<{ request_id: string }>({
        name: "hold-progress",
        // The holds found settled are answered from the statement's snapshot, taken before its writes.
        text: `WITH request AS (
                 SELECT * FROM json_to_recordset($3::json)
                   AS request(request_id text, output_tokens integer, input_tokens integer,
                              cached_input_tokens integer, answering_model text)
               ), recorded AS (
                 INSERT INTO hold_progress AS progress (request_id, gateway_instance, output_tokens,
                   input_tokens, cached_input_tokens, answering_model, renewed_until, recorded_at)
                 SELECT request.request_id, $1, request.output_tokens, request.input_tokens,
                        request.cached_input_tokens, request.answering_model,
                        now() + make_interval(secs => $2 / 1000.0), now()
                 FROM request
                 ORDER BY request.request_id
                 ON CONFLICT (request_id) DO UPDATE SET output_tokens = excluded.output_tokens,
                   input_tokens = excluded.input_tokens, cached_input_tokens = excluded.cached_input_tokens,
                   answering_model = excluded.answering_model, renewed_until = excluded.renewed_until,
                   recorded_at = excluded.recorded_at
               )
               SELECT request.request_id FROM request
               WHERE NOT EXISTS (SELECT 1 FROM request_holds holds
                                 WHERE holds.request_id = request.request_id AND holds.settled_at IS NULL)`,
        values: [this.options.gatewayInstance, this.options.holdLifetimeMs, JSON.stringify(requests)],
      });
      released = new Set(result.rows.map((row) => row.request_id));
      if (this.failing) this.options.logger.info("recording the progress of requests in flight again");
      this.failing = false;
    } catch (error) {
      // The next interval tries again; the sweep waits out a database outage before it judges anyone.
      if (!this.failing)
        this.options.logger.error({ err: error }, "recording the progress of requests in flight failed");
      this.failing = true;
      return;
    }
    for (const [requestId, tracked] of snapshot) {
      // Settled here meanwhile (its own usage) or still running: only a request still tracked is told.
      if (this.inFlight.get(requestId) !== tracked) continue;
      if (!released.has(requestId)) {
        if (this.withoutSessionSinceMs === undefined && sentAtMs >= this.sessionTakenAtMs)
          tracked.confirmedAtMs = Math.max(tracked.confirmedAtMs, sentAtMs);
        continue;
      }
      this.inFlight.delete(requestId);
      this.options.logger.warn(
        { requestId },
        "this request's hold was released by the orphan sweep (this process was presumed dead): cutting it",
      );
      tracked.onReleased();
    }
  }
}
