import type pg from "pg";
import type { Logger } from "pino";
import { isLockNotAvailable, lockTimeoutSettingOf, RowsLockedError } from "../../database/lock-wait";
import { limits } from "../../kernel/limits";
import { errorSummaryOf, type ThrottledLog, throttledLog } from "../../kernel/throttled-log";
import { type AccountReference, accountNameOf } from "../../ledger/events";

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
 *
 * A batch's append moves its accounts' settled funds rows (the funds trigger), and a writer has one batch in
 * flight, which mixes accounts: a transaction left open on one account's row (an operator's `SELECT … FOR
 * UPDATE`) would keep every account's rows out of the log for as long as it lasts. So a statement waits for
 * rows only so long (`limits.settledFundsLockWaitMs`), and, as hold-authorizer.ts does with holds, the
 * accounts of a batch that gave up are set apart: the writer's batches leave their rows, and each is logged
 * by statements of its own beside them (one at a time) — at once, so an account whose row was free is logged
 * and rejoins the others, and, for an account whose own statement gave up too, again after a backoff
 * (`limits.lockedAccountRetryBaseMs`, doubling to `…MaxMs`) until one logs it. Its rows stay meanwhile,
 * counted by its funds as before; nothing is logged twice (a batch that gave up appended nothing and deleted
 * no row).
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
  /** Statements given up on a held row, and the accounts set apart for it (see above); limits.ts's by default. */
  lockedAccounts?: Partial<LockedAccountBounds>;
  clockMs?: () => number;
}

interface LockedAccountBounds {
  /** How long a statement waits for each lock on the rows it moves before it gives up (`lock_timeout`). */
  lockWaitMs: number;
  /** An account whose own statement gave up is tried again after this, doubling each time, up to the max. */
  retryBaseMs: number;
  retryMaxMs: number;
  /** Accounts set apart at once (a hint: forgotten whole past the bound, their rows left to the poll). */
  apartMax: number;
}

/** An account set apart: whose rows are logged by statements of their own, when due. */
interface Apart {
  account: AccountReference;
  /** Its statements that gave up in a row. */
  lockedTimes: number;
  dueAtMs: number;
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
  /** By-id batches left rows of accounts apart: scan when one rejoins. */
  private scanOnRejoin = false;
  private readonly errors: ThrottledLog;
  /** Statements given up on a held row: expected while the transaction holding it lasts, told at warn. */
  private readonly lockWaits: ThrottledLog;
  /** Accounts set apart, by name (`accountNameOf`), and the one write of theirs in flight. */
  private readonly apart = new Map<string, Apart>();
  private writingApart: Promise<void> | undefined;
  private apartTimer: NodeJS.Timeout | undefined;
  private readonly bounds: LockedAccountBounds;
  private readonly clockMs: () => number;

  constructor(private readonly options: SettledHoldsLogOptions) {
    this.errors = throttledLog(options.logger, 5_000);
    this.lockWaits = throttledLog(options.logger, limits.ledgerOutageLogIntervalMs);
    this.bounds = {
      lockWaitMs: limits.settledFundsLockWaitMs,
      retryBaseMs: limits.lockedAccountRetryBaseMs,
      retryMaxMs: limits.lockedAccountRetryMaxMs,
      apartMax: limits.lockedAccountsApartMax,
      ...options.lockedAccounts,
    };
    this.clockMs = options.clockMs ?? Date.now;
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

  /**
   * Logs every settled row now (a stop's last flush, tests), those of accounts set apart too; resolves when
   * none is left, a write failed, or a held account's statement gave up.
   */
  async flush(): Promise<void> {
    await this.writing;
    this.scan = true;
    await this.writeAll();
    await this.writingApart;
    clearTimeout(this.apartTimer);
    this.writingApart = this.writeApart({ dueOnly: false }).finally(() => {
      this.writingApart = undefined;
      this.scheduleApart();
    });
    await this.writingApart;
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
    clearTimeout(this.apartTimer);
    clearInterval(this.poller);
    await this.writing;
    await this.writingApart;
  }

  /**
   * This process's settled rows by id, then — on a poll — any others, batch by batch until one is not full.
   * A failure is logged; the ids stay for the next write, and the poll finds whatever is left.
   */
  private async writeAll(): Promise<void> {
    const scan = this.scan;
    this.scan = false;
    if (scan && this.apart.size === 0) this.scanOnRejoin = false;
    try {
      while (this.settledHere.size > 0 && !this.closed) {
        const requestIds = [...this.settledHere].slice(0, this.options.batchSizeMax);
        // Given up: every account of its rows is apart now, and logs them on its own.
        const apartBefore = this.apart.size;
        await this.givenUpSetsApart(this.writeBatch(requestIds), () => this.accountsNamed(requestIds));
        for (const requestId of requestIds) this.settledHere.delete(requestId);
        // The batch left the rows of accounts apart, whose own write may have run before they settled: once
        // those accounts rejoin, a scan finds such rows (the ids are forgotten here).
        if (apartBefore > 0 || this.apart.size > 0) this.scanOnRejoin = true;
      }
      if (scan)
        while (
          !this.closed &&
          (await this.givenUpSetsApart(this.writeBatch(), () => this.accountsToScan())) ===
            this.options.batchSizeMax
        ) {}
      this.errors.recovered("logging settled holds works again");
    } catch (error) {
      if (error instanceof RowsLockedError)
        this.lockWaits.warn(
          { err: errorSummaryOf(error) },
          "logging settled holds waited too long for a row another transaction holds; retrying",
        );
      else this.errors.error({ err: errorSummaryOf(error) }, "logging settled holds failed; retrying");
    }
  }

  /**
   * The batch's rows taken, or, when it gave up on a held row, its accounts (`accountsOf`) set apart and
   * logged apart at once: answers the batch size then, so that a scan goes on without them. Throws when none
   * of them was new (the batch would give up again).
   */
  private async givenUpSetsApart(
    batch: Promise<number>,
    accountsOf: () => Promise<AccountReference[]>,
  ): Promise<number> {
    try {
      return await batch;
    } catch (error) {
      if (!(error instanceof RowsLockedError)) throw error;
      let added = 0;
      for (const account of await accountsOf()) {
        const name = accountNameOf(account);
        if (this.apart.has(name)) continue;
        if (this.apart.size >= this.bounds.apartMax) {
          // Forgotten whole: the poll's scans find their rows, and set apart again those still held.
          this.apart.clear();
          this.scan = true;
        }
        this.apart.set(name, { account, lockedTimes: 0, dueAtMs: this.clockMs() });
        added += 1;
      }
      if (added === 0) throw error;
      this.lockWaits.warn(
        { err: errorSummaryOf(error), accountsSetApart: added },
        "logging settled holds waited too long for an account's funds row; its batch's accounts are logged apart",
      );
      this.writeApartSoon();
      return this.options.batchSizeMax;
    }
  }

  /** The accounts of the named settled rows (those still here). */
  private async accountsNamed(requestIds: readonly string[]): Promise<AccountReference[]> {
    const result = await this.options.pool.query<{ kind: string; id: string }>({
      name: "settled-holds-accounts-by-id",
      text: `SELECT DISTINCT account_kind AS kind, account_id AS id FROM request_holds
             WHERE request_id = ANY ($1::text[]) AND settled_at IS NOT NULL`,
      values: [requestIds],
    });
    return result.rows.map(accountOfRow);
  }

  /** The accounts of the rows a scan takes (as it would take them, save those another writer holds). */
  private async accountsToScan(): Promise<AccountReference[]> {
    const result = await this.options.pool.query<{ kind: string; id: string }>({
      name: "settled-holds-accounts-to-scan",
      text: `SELECT DISTINCT taken.account_kind AS kind, taken.account_id AS id FROM (
               SELECT holds.account_kind, holds.account_id FROM request_holds holds
               WHERE holds.settled_at IS NOT NULL AND ${notApartAt(2)}
               ORDER BY holds.settled_at LIMIT $1
             ) taken`,
      values: [this.options.batchSizeMax, [...this.apart.keys()]],
    });
    return result.rows.map(accountOfRow);
  }

  /** Starts a write of the accounts set apart whose turn has come, unless one is under way. */
  private writeApartSoon(): void {
    if (this.closed || this.writingApart) return;
    clearTimeout(this.apartTimer);
    this.apartTimer = undefined;
    this.writingApart = this.writeApart({ dueOnly: true }).finally(() => {
      this.writingApart = undefined;
      this.scheduleApart();
    });
  }

  /** A timer for the next account set apart whose turn comes. */
  private scheduleApart(): void {
    if (this.closed || this.apart.size === 0) return;
    const dueAtMs = Math.min(...[...this.apart.values()].map((apart) => apart.dueAtMs));
    clearTimeout(this.apartTimer);
    this.apartTimer = setTimeout(() => this.writeApartSoon(), Math.max(0, dueAtMs - this.clockMs()));
    this.apartTimer.unref();
  }

  /**
   * Each account set apart (whose turn has come, with `dueOnly`), one after another: its settled rows, batch
   * by batch, then it rejoins the others; or, given up on, its turn comes again after the backoff.
   */
  private async writeApart({ dueOnly }: { dueOnly: boolean }): Promise<void> {
    for (const [name, apart] of [...this.apart]) {
      if (this.closed) return;
      if (dueOnly && apart.dueAtMs > this.clockMs()) continue;
      try {
        while ((await this.writeBatchOf(apart.account)) === this.options.batchSizeMax && !this.closed) {}
        if (this.apart.get(name) === apart) {
          this.apart.delete(name);
          // Its rows that by-id batches left while it was apart, settled after its own write took its rows.
          if (this.scanOnRejoin) {
            this.scan = true;
            this.write();
          }
        }
        if (apart.lockedTimes > 0)
          this.lockWaits.recovered("settled holds of an account held apart are logged");
      } catch (error) {
        if (!(error instanceof RowsLockedError)) {
          // The database failing: every account apart waits a turn, not a loop of failing statements.
          const notBeforeMs = this.clockMs() + this.bounds.retryBaseMs;
          for (const each of this.apart.values()) each.dueAtMs = Math.max(each.dueAtMs, notBeforeMs);
          this.errors.error({ err: errorSummaryOf(error) }, "logging settled holds failed; retrying");
          return;
        }
        apart.lockedTimes += 1;
        const retryInMs = Math.min(
          this.bounds.retryBaseMs * 2 ** Math.min(apart.lockedTimes - 1, 30),
          this.bounds.retryMaxMs,
        );
        apart.dueAtMs = this.clockMs() + retryInMs;
        this.lockWaits.warn(
          { err: errorSummaryOf(error), account: name, lockedTimes: apart.lockedTimes, retryInMs },
          "logging an account's settled holds waited too long for its funds row; its rows stay until a later try",
        );
      }
    }
  }

  /**
   * One batch: the settled rows of `requestIds` (those another writer holds or logged are skipped), or any
   * settled rows when none are named. Answers how many rows it took.
   */
  async writeBatch(requestIds?: readonly string[]): Promise<number> {
    const apart = [...this.apart.keys()];
    return this.logged(
      requestIds
        ? { name: "log-settled-holds-by-id", text: logSettledHoldsByIdStatement, values: [apart, requestIds] }
        : { name: "log-settled-holds", text: logSettledHoldsStatement, values: [apart] },
    );
  }

  /** One batch of the account's settled rows (whether set apart or not). */
  private writeBatchOf(account: AccountReference): Promise<number> {
    return this.logged({
      name: "log-settled-holds-of-account",
      text: logSettledHoldsOfAccountStatement,
      values: [account.kind, account.id],
    });
  }

  /** Runs one of the statements below (`values` from its `$4` on), and tells what it logged. */
  private async logged(statement: { name: string; text: string; values: unknown[] }): Promise<number> {
    const result = await this.options.pool
      .query<{ request_id: string; settlement_type: string; logged: boolean }>({
        name: statement.name,
        text: statement.text,
        values: [
          this.options.batchSizeMax,
          this.options.log.transactionOrderOffset,
          lockTimeoutSettingOf(this.bounds.lockWaitMs),
          ...statement.values,
        ],
      })
      .catch((error: unknown) => {
        if (isLockNotAvailable(error))
          throw new RowsLockedError(
            `a batch waited ${this.bounds.lockWaitMs} ms for a row another transaction holds`,
            {
              cause: error,
            },
          );
        throw error;
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

/** Rows not of an account set apart (parameter `$n`: their names, `accountNameOf`). */
const notApartAt = (n: number) => `NOT (holds.account_kind || ':' || holds.account_id = ANY ($${n}::text[]))`;
/** In the logging statements, after their batch size, offset and lock wait. */
const notApart = notApartAt(4);

function accountOfRow(row: { kind: string; id: string }): AccountReference {
  return { kind: row.kind as AccountReference["kind"], id: row.id };
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
  ), chained AS MATERIALIZED (
    -- Each request's two events as one row, their fields once (data and metadata as the json text stored and
    -- hashed), the hold's link computed here; the settlement's link follows from it in the insert's row. No
    -- join between a batch's requests: pairing a batch's events by a join ran as a nested loop quadratic in
    -- the batch (the planner cannot count a CTE's rows), about 14 ms of a 500-row batch's 65.
    SELECT fields.*,
           ledger_event_hash(decode(repeat('00', 32), 'hex'), fields.stream_id, 0, fields.held_id, fields.held_type,
             fields.held_schema_version, fields.held_data, fields.held_metadata) AS held_hash
    FROM (
      SELECT loggable.request_id, loggable.stream_id, loggable.settled_at,
             (loggable.held->>'eventId')::uuid AS held_id, loggable.held->>'type' AS held_type,
             (loggable.held->>'schemaVersion')::smallint AS held_schema_version,
             (loggable.held->'data')::json AS held_data, (loggable.held->'metadata')::json AS held_metadata,
             (loggable.settled->>'eventId')::uuid AS settled_id, loggable.settled->>'type' AS settled_type,
             (loggable.settled->>'schemaVersion')::smallint AS settled_schema_version,
             (loggable.settled->'data')::json AS settled_data, (loggable.settled->'metadata')::json AS settled_metadata
      FROM loggable
      WHERE loggable.fresh
      -- A subquery of its own, so each field is computed once: pulled up, the hash's arguments would be again.
      OFFSET 0
    ) fields
  ), appended AS (
    INSERT INTO ledger_events (transaction_order, event_id, stream_id, stream_version, type, schema_version, data,
                               metadata, chain_hash)
    SELECT pg_current_xact_id()::text::bigint + $2, linked.event_id, chained.stream_id, linked.version, linked.type,
           linked.schema_version, linked.data, linked.metadata, linked.hash
    FROM chained
    CROSS JOIN LATERAL (VALUES
      (0, chained.held_id, chained.held_type, chained.held_schema_version, chained.held_data, chained.held_metadata,
       chained.held_hash),
      (1, chained.settled_id, chained.settled_type, chained.settled_schema_version, chained.settled_data,
       chained.settled_metadata,
       ledger_event_hash(chained.held_hash, chained.stream_id, 1, chained.settled_id, chained.settled_type,
         chained.settled_schema_version, chained.settled_data, chained.settled_metadata))
    ) AS linked(version, event_id, type, schema_version, data, metadata, hash)
    ORDER BY chained.settled_at, chained.request_id, linked.version
  ), removed AS (
    -- The ids as one array: probes of the primary key, whatever the planner guesses of the table.
    DELETE FROM request_holds holds WHERE holds.request_id = ANY (ARRAY(SELECT chained.request_id FROM chained))
  )
  -- The lock wait ($3) is set before the funds trigger locks its rows: the trigger runs once the statement is
  -- done, and this row is read for its answer.
  SELECT loggable.request_id, loggable.settled->>'type' AS settlement_type, loggable.fresh AS logged
  FROM loggable,
       (SELECT set_config('synchronous_commit', 'off', true), set_config('lock_timeout', $3, true)) settings`;

const logSettledHoldsStatement = logSettledHoldsStatementOf(notApart);
const logSettledHoldsByIdStatement = logSettledHoldsStatementOf(
  `holds.request_id = ANY ($5::text[]) AND ${notApart}`,
);
const logSettledHoldsOfAccountStatement = logSettledHoldsStatementOf(
  "holds.account_kind = $4 AND holds.account_id = $5",
);
