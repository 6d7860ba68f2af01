import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import type { AccountReference, EventData } from "../../ledger/events";
import {
  type EventStore,
  type StreamAppend,
  WrongExpectedVersionError,
} from "../../ledger/store/event-store";
import type { GroupCommitAppender } from "../../ledger/store/group-commit-appender";
import type { ChargeEnqueuer } from "../queue/charge-enqueuer";

/**
 * What a request leaves to write once it has answered: its `UsageRecorded` (then its charge job), or the
 * `UsageVoided` of a hold that produced nothing. The hold is already durable, so the answer does not wait
 * for these; they are group-committed, and retried with backoff while the ledger is away. Each goes at
 * version 1 of its usage stream, right after the authorization: if the orphan sweep settled the hold
 * first (this process was presumed dead), the store refuses it, and the request stays settled once.
 *
 * Bounded: past `entriesMax` waiting writes the gateway stops admitting (`isFull`), rather than holding
 * an unbounded backlog in memory. If the process dies with writes waiting, their holds are orphans, and
 * the sweep settles them (C10).
 */

export interface UsageOutboxOptions {
  appender: Pick<GroupCommitAppender, "append">;
  store: Pick<EventStore, "readStream">;
  charges: ChargeEnqueuer;
  logger: Logger;
  entriesMax: number;
  retryDelaysMs: readonly number[];
}

type Settlement =
  | { type: "UsageRecorded"; data: EventData<"UsageRecorded"> }
  | { type: "UsageVoided"; data: EventData<"UsageVoided"> };

export class UsageOutbox {
  private waitingCount = 0;
  private readonly idle = new Set<() => void>();
  /** The settlements still being written, per account (`kind:id`). */
  private readonly writingByAccount = new Map<string, Set<Promise<void>>>();

  constructor(private readonly options: UsageOutboxOptions) {}

  get isFull(): boolean {
    return this.waitingCount >= this.options.entriesMax;
  }

  get size(): number {
    return this.waitingCount;
  }

  record(data: EventData<"UsageRecorded">, actor: string): void {
    this.write({ type: "UsageRecorded", data }, actor);
  }

  void(data: EventData<"UsageVoided">, actor: string): void {
    this.write({ type: "UsageVoided", data }, actor);
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

  private write(settlement: Settlement, actor: string): void {
    const append = appendOf(settlement, actor);
    this.track(settlement.data.account, (written) => void this.appendAttempt(append, settlement, 0, written));
  }

  /** Counts a write as waiting, for its account too, until it calls `written`. */
  private track(account: AccountReference, start: (written: () => void) => void): void {
    this.waitingCount += 1;
    const accountKey = accountKeyOf(account);
    const writing = this.writingByAccount.get(accountKey) ?? new Set();
    this.writingByAccount.set(accountKey, writing);
    const written = new Promise<void>((resolve) => start(resolve)).then(() => this.finished());
    writing.add(written);
    void written.then(() => {
      writing.delete(written);
      if (writing.size === 0) this.writingByAccount.delete(accountKey);
    });
  }

  private async appendAttempt(
    append: StreamAppend,
    settlement: Settlement,
    attempt: number,
    written: () => void,
  ): Promise<void> {
    const requestId = settlement.data.requestId;
    try {
      await this.options.appender.append(append);
      if (settlement.type === "UsageRecorded") this.options.charges.enqueueCharge(requestId);
    } catch (error) {
      if (!(error instanceof WrongExpectedVersionError)) {
        this.retryLater(error, requestId, attempt, () =>
          this.appendAttempt(append, settlement, attempt + 1, written),
        );
        return;
      }
      this.options.logger.warn(
        { requestId, settlement: settlement.type },
        "the hold was settled elsewhere first (orphan sweep); this settlement is dropped",
      );
    }
    written();
  }

  private async voidIfHeldAttempt(
    requestId: string,
    actor: string,
    attempt: number,
    written: () => void,
  ): Promise<void> {
    let settlement: Settlement | undefined;
    try {
      const stream = await this.options.store.readStream(`usage-${requestId}`);
      const hold = stream[0];
      if (stream.length === 1 && hold?.type === "UsageAuthorized") {
        settlement = {
          type: "UsageVoided",
          data: {
            requestId,
            account: hold.data.account,
            releasedWon: hold.data.holdWon,
            reason: "ledger-unavailable",
          },
        };
      }
    } catch (error) {
      this.retryLater(error, requestId, attempt, () =>
        this.voidIfHeldAttempt(requestId, actor, attempt + 1, written),
      );
      return;
    }
    if (settlement) await this.appendAttempt(appendOf(settlement, actor), settlement, 0, written);
    else written();
  }

  private retryLater(error: unknown, requestId: string, attempt: number, retry: () => Promise<void>): void {
    const delays = this.options.retryDelaysMs;
    const delayMs = delays[Math.min(attempt, delays.length - 1)]!;
    if (attempt % 10 === 0)
      this.options.logger.warn(
        { err: error, requestId, attempt },
        "settling a request's hold failed; retrying",
      );
    setTimeout(() => void retry(), delayMs).unref();
  }

  private finished(): void {
    this.waitingCount -= 1;
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
    streamId: `usage-${requestId}`,
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
