import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import { AssertionError } from "../../kernel/assert";
import { limits } from "../../kernel/limits";
import { type ThrottledLog, throttledLog } from "../../kernel/throttled-log";
import type { AccountReference, EventData } from "../../ledger/events";
import type { EventStore, StreamAppend } from "../../ledger/store/event-store";
import { billingMetrics } from "../billing-metrics";
import { usageStreamIdOf } from "../charging/charge-usage";
import type { ChargeEnqueuer } from "../queue/charge-enqueuer";
import { type HoldRowCompletion, rowEventOf } from "./hold-row-completion";
import { type LateSettlement, lateSettlementOf, type Settlement } from "./late-settlement";
import type { SettledHoldsLog } from "./settled-holds-log";
import type { SweptHoldReserves } from "./swept-hold-reserves";

/**
 * What a request leaves to write once it has produced its answer: its usage, or the void of a hold that
 * produced nothing, completing its hold row in place (hold-row-completion.ts; the log writer appends the
 * row's events later, settled-holds-log.ts). Group-committed across requests, and retried with backoff while
 * the database is away; `record` resolves once the usage is durable, and a complete answer's last bytes wait
 * for that (so a crash can cut only answers that were not complete).
 *
 * If the row is not open — the orphan sweep settled the hold first, or the hold's commit was lost — the
 * delivered usage is still written (late-settlement.ts), against the usage stream once the row is logged: a
 * settlement of the serving gateway is never dropped. Once it is in the log, what the sweep kept back for it
 * is released (swept-hold-reserves.ts).
 *
 * Bounded: past `entriesMax` waiting writes the gateway stops admitting (`isFull`), rather than holding
 * an unbounded backlog in memory. If the process dies with writes waiting, their holds are orphans, and
 * the sweep settles them (C10).
 */

export interface UsageOutboxOptions {
  completion: Pick<HoldRowCompletion, "complete" | "hasRow" | "voidIfOpen">;
  /** Told of every row settled here, so it is logged soon. */
  log: Pick<SettledHoldsLog, "settled">;
  /** For a settlement that finds no open row: the usage stream, read and appended to. */
  store: Pick<EventStore, "readStream" | "append">;
  /** What the sweep kept back for a late settlement, released once it is written. */
  reserves: Pick<SweptHoldReserves, "release">;
  charges: ChargeEnqueuer;
  logger: Logger;
  entriesMax: number;
  retryDelaysMs: readonly number[];
}

export class UsageOutbox {
  private waitingCount = 0;
  private readonly idle = new Set<() => void>();
  /** The settlements still being written, per account (`kind:id`). */
  private readonly writingByAccount = new Map<string, Set<Promise<void>>>();

  /** While the ledger is away every request's settlement is retried: a line per interval, not per request. */
  private readonly retryFailures: ThrottledLog;

  constructor(private readonly options: UsageOutboxOptions) {
    this.retryFailures = throttledLog(options.logger, limits.ledgerOutageLogIntervalMs);
  }

  get isFull(): boolean {
    return this.waitingCount >= this.options.entriesMax;
  }

  get size(): number {
    return this.waitingCount;
  }

  /** Resolves once the usage is durable (in its row, or in the ledger: corrected, or recorded without its hold). */
  record(data: EventData<"UsageRecorded">, actor: string): Promise<void> {
    return this.write({ type: "UsageRecorded", data }, actor);
  }

  void(data: EventData<"UsageVoided">, actor: string): Promise<void> {
    return this.write({ type: "UsageVoided", data }, actor);
  }

  /**
   * After a hold whose outcome is unknown (the connection failed around its commit): if the hold was placed
   * after all, it is voided, so it is not left held until it expires; if not, nothing is written.
   */
  voidIfHeld(requestId: string, account: AccountReference, actor: string): void {
    this.track(account, (written) => void this.voidIfHeldAttempt(requestId, actor, 0, written));
  }

  /**
   * The settlements of this account being written now, each settling once written. Taken before a hold is
   * asked for: a settlement committing meanwhile may be missing from the hold's snapshot, so a hold refused
   * while they were on their way may fit once they are written (see `settled`).
   */
  settlementsOf(account: AccountReference): readonly Promise<void>[] {
    return [...(this.writingByAccount.get(accountKeyOf(account)) ?? [])];
  }

  /** Resolves once `settlements` are written, or after `timeoutMs`; false at once when there are none. */
  static async settled(settlements: readonly Promise<void>[], timeoutMs: number): Promise<boolean> {
    if (settlements.length === 0) return false;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all(settlements),
      new Promise((resolve) => {
        timer = setTimeout(resolve, timeoutMs);
      }),
    ]);
    clearTimeout(timer);
    return true;
  }

  /** Resolves once nothing waits, or after `timeoutMs` with how many still do. */
  async drain(timeoutMs: number): Promise<number> {
    if (this.waitingCount === 0) return 0;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, timeoutMs);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.idle.add(done);
    });
    return this.waitingCount;
  }

  private write(settlement: Settlement, actor: string): Promise<void> {
    const append = appendOf(settlement, actor);
    return this.track(
      settlement.data.account,
      (written) => void this.completeAttempt(append, settlement, 0, written),
    );
  }

  /** Counts a write as waiting, for its account too, until it calls `written` (when it resolves). */
  private track(account: AccountReference, start: (written: () => void) => void): Promise<void> {
    this.waitingCount += 1;
    billingMetrics.observeSettlementsWaiting(1);
    const accountKey = accountKeyOf(account);
    const writing = this.writingByAccount.get(accountKey) ?? new Set();
    this.writingByAccount.set(accountKey, writing);
    const written = new Promise<void>((resolve) => start(resolve)).then(() => this.finished());
    writing.add(written);
    void written.then(() => {
      writing.delete(written);
      if (writing.size === 0) this.writingByAccount.delete(accountKey);
    });
    return written;
  }

  private async completeAttempt(
    append: StreamAppend,
    settlement: Settlement,
    attempt: number,
    written: () => void,
  ): Promise<void> {
    const requestId = settlement.data.requestId;
    const [{ eventId, event }] = append.events as [StreamAppend["events"][number]];
    let completed: boolean;
    try {
      completed = await this.options.completion.complete({
        requestId,
        settlement: rowEventOf(eventId, event),
        pendingWon: settlement.type === "UsageRecorded" ? (settlement.data.pendingWon ?? "0") : "0",
      });
    } catch (error) {
      this.retryLater(error, requestId, attempt, () =>
        this.completeAttempt(append, settlement, attempt + 1, written),
      );
      return;
    }
    if (!completed) {
      await this.settleLate(append, settlement, attempt, written);
      return;
    }
    this.options.log.settled(requestId);
    written();
  }

  /**
   * The row was not open: once it is logged (a row the sweep settled is logged soon), write what was delivered
   * against the usage stream, as late-settlement.ts says.
   */
  private async settleLate(
    original: StreamAppend,
    settlement: Settlement,
    attempt: number,
    written: () => void,
  ): Promise<void> {
    const requestId = settlement.data.requestId;
    let late: LateSettlement;
    try {
      if (await this.options.completion.hasRow(requestId)) {
        this.options.log.settled(requestId);
        this.retryLater(undefined, requestId, attempt, () =>
          this.settleLate(original, settlement, attempt + 1, written),
        );
        return;
      }
      const stream = await this.options.store.readStream(original.streamId);
      // This very settlement, completed by an attempt whose answer was lost, and logged since.
      if (stream.some((event) => event.eventId === original.events[0]!.eventId)) {
        written();
        return;
      }
      late = lateSettlementOf(stream, settlement, original.events[0]!.event.metadata);
      if (late.kind === "append") await this.options.store.append(late.append);
      // After the correction, never before (the money it bills was kept back for it); a release that fails
      // is retried, and the retry finds the correction written ("already-corrected") and releases again.
      await this.options.reserves.release(requestId);
    } catch (error) {
      // A broken invariant (money-invariants.ts) would break again: it stops the process, never retried.
      if (error instanceof AssertionError) throw error;
      // A conflict again (the sweep's charge landed meanwhile) or the ledger away: read and decide anew.
      this.retryLater(error, requestId, attempt, () =>
        this.settleLate(original, settlement, attempt + 1, written),
      );
      return;
    }
    switch (late.kind) {
      case "append":
        this.options.logger.warn(
          { requestId, settlement: settlement.type, reason: late.reason },
          "the request's hold was settled without this process; its delivered usage is recorded as a correction",
        );
        this.options.charges.enqueueCharge(requestId);
        break;
      case "settled":
        break;
      case "impossible":
        this.options.logger.error({ requestId, reason: late.reason }, "this settlement fits no usage stream");
        break;
      default: {
        const unreachable: never = late;
        throw new Error(`unknown late settlement ${JSON.stringify(unreachable)}`);
      }
    }
    written();
  }

  private async voidIfHeldAttempt(
    requestId: string,
    actor: string,
    attempt: number,
    written: () => void,
  ): Promise<void> {
    try {
      const voided = await this.options.completion.voidIfOpen(requestId, randomUUID(), {
        actor,
        correlationId: requestId,
        occurredAt: new Date().toISOString(),
      });
      if (voided) this.options.log.settled(requestId);
    } catch (error) {
      this.retryLater(error, requestId, attempt, () =>
        this.voidIfHeldAttempt(requestId, actor, attempt + 1, written),
      );
      return;
    }
    written();
  }

  /** `error` undefined: waiting for the row to be logged, not a failure. */
  private retryLater(error: unknown, requestId: string, attempt: number, retry: () => Promise<void>): void {
    const delays = this.options.retryDelaysMs;
    const delayMs = delays[Math.min(attempt, delays.length - 1)]!;
    if (error !== undefined && attempt % 10 === 0)
      this.retryFailures.warn(
        { err: error, requestId, attempt },
        "settling a request's hold failed; retrying",
      );
    setTimeout(() => void retry(), delayMs).unref();
  }

  private finished(): void {
    this.waitingCount -= 1;
    billingMetrics.observeSettlementsWaiting(-1);
    if (this.waitingCount === 0) {
      for (const done of [...this.idle]) done();
      this.idle.clear();
    }
  }
}

function accountKeyOf(account: AccountReference): string {
  return `${account.kind}:${account.id}`;
}

function appendOf(settlement: Settlement, actor: string): StreamAppend {
  const requestId = settlement.data.requestId;
  return {
    streamId: usageStreamIdOf(requestId),
    expectedVersion: 0,
    events: [
      {
        // One id for every attempt: a retry after an ambiguous failure cannot write twice.
        eventId: randomUUID(),
        event: {
          ...settlement,
          metadata: { actor, correlationId: requestId, occurredAt: new Date().toISOString() },
        } as StreamAppend["events"][number]["event"],
      },
    ],
  };
}
