import type pg from "pg";
import type { Logger } from "pino";
import { errorSummaryOf, type ThrottledLog, throttledLog } from "../../kernel/throttled-log";

/**
 * Keeps the hold rows' table (src/ledger/schema/holds/request-holds.ts) as small as its live rows: vacuums it
 * once the log writer of this process has removed `rowsPerVacuum` rows since the last time, at most once every
 * `intervalMinMs`.
 *
 * Autovacuum alone does not: it visits a database at most once a minute (`autovacuum_naptime`), and one busy
 * account removes 60,000 rows a minute at 1,000 requests a second. Until vacuumed, a removed row keeps its
 * index entries and its page: inserts extend the table rather than reuse the space (only vacuum records free
 * space), and every hold, which sums its account's rows through the account index, visits the pages of the
 * removed rows too, each on a page of its own at this table's fill factor — more with every request until the
 * next visit (docs/operations.md has the figures).
 *
 * `SKIP_LOCKED`: a vacuum already running (another process's, autovacuum's) does the same work. `TRUNCATE
 * false`: giving emptied pages back to the system takes a lock that stops every hold while it is held; the
 * pages are reused instead.
 */

export interface HoldRowsVacuumOptions {
  pool: Pick<pg.Pool, "query">;
  /** Rows removed by this process's log writer that call for a vacuum. */
  rowsPerVacuum: number;
  /** The least time between two vacuums by this process. */
  intervalMinMs: number;
  logger: Logger;
  /** Milliseconds on a monotonic clock (tests set it). */
  now?: () => number;
}

export class HoldRowsVacuum {
  private removedSinceVacuum = 0;
  private lastVacuumAt = Number.NEGATIVE_INFINITY;
  private running: Promise<void> | undefined;
  private closed = false;
  private readonly now: () => number;
  private readonly errors: ThrottledLog;

  constructor(private readonly options: HoldRowsVacuumOptions) {
    this.now = options.now ?? (() => performance.now());
    this.errors = throttledLog(options.logger, 60_000);
  }

  /**
   * The log writer removed `rows` logged rows: vacuums when enough were and the last vacuum is old enough.
   * Answers the vacuum it started (it never rejects), or undefined.
   */
  removed(rows: number): Promise<void> | undefined {
    this.removedSinceVacuum += rows;
    if (this.closed || this.running || this.removedSinceVacuum < this.options.rowsPerVacuum) return undefined;
    const now = this.now();
    if (now - this.lastVacuumAt < this.options.intervalMinMs) return undefined;
    this.removedSinceVacuum = 0;
    this.lastVacuumAt = now;
    this.running = this.options.pool
      .query("VACUUM (SKIP_LOCKED, TRUNCATE false) request_holds")
      .then(
        () => undefined,
        // Not the money's concern: autovacuum still comes; the next removal tries again.
        (error: unknown) =>
          this.errors.error({ err: errorSummaryOf(error) }, "vacuuming the hold rows failed"),
      )
      .finally(() => {
        this.running = undefined;
      });
    return this.running;
  }

  /** Resolves once a vacuum under way has ended; none starts after. */
  async close(): Promise<void> {
    this.closed = true;
    await this.running;
  }
}
