import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import { AssertionError } from "../../kernel/assert";
import type { AccountReference, EventData } from "../../ledger/events";
import {
  type EventStore,
  type StreamAppend,
  WrongExpectedVersionError,
} from "../../ledger/store/event-store";
import type { GroupCommitAppender } from "../../ledger/store/group-commit-appender";
import { usageStreamIdOf } from "../charging/charge-usage";
import type { ChargeEnqueuer } from "../queue/charge-enqueuer";
import { type LateSettlement, lateSettlementOf, type Settlement } from "./late-settlement";

/**
 * What a request leaves to write once it has produced its answer: its `UsageRecorded` (then its charge
 * job), or the `UsageVoided` of a hold that produced nothing. They are group-committed across requests, and
 * retried with backoff while the ledger is away; `record` resolves once the usage is durable, and a
 * complete answer's last bytes wait for that (so a crash can cut only answers that were not complete).
 * Each goes at version 1 of its usage stream, right after the authorization. If the stream is not as this
 * process left it — the orphan sweep settled the hold first, or the hold's commit was lost — the delivered
 * usage is still written (late-settlement.ts): a settlement of the serving gateway is never dropped.
 *
 * Bounded: past `entriesMax` waiting writes the gateway stops admitting (`isFull`), rather than holding
 * an unbounded backlog in memory. If the process dies with writes waiting, their holds are orphans, and
 * the sweep settles them (C10).
 */

export interface UsageOutboxOptions {
  appender: Pick<GroupCommitAppender, "append">;
  store: Pick<EventStore, "readStream" | "append">;
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

  constructor(private readonly options: UsageOutboxOptions) {}

  get isFull(): boolean {
    return this.waitingCount >= this.options.entriesMax;
  }

  get size(): number {
    return this.waitingCount;
  }

  /** Resolves once the usage is durable in the ledger (written, corrected, or recorded without its hold). */
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
      (written) => void this.appendAttempt(append, settlement, 0, written),
    );
  }

  /** Counts a write as waiting, for its account too, until it calls `written` (when it resolves). */
  private track(account: AccountReference, start: (written: () => void) => void): Promise<void> {
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
    return written;
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
      if (error instanceof WrongExpectedVersionError) {
        await this.settleLate(append, settlement, attempt, written);
        return;
      }
      this.retryLater(error, requestId, attempt, () =>
        this.appendAttempt(append, settlement, attempt + 1, written),
      );
      return;
    }
    written();
  }

  /** The stream moved on without this settlement: write what was delivered as late-settlement.ts says. */
  private async settleLate(
    original: StreamAppend,
    settlement: Settlement,
    attempt: number,
    written: () => void,
  ): Promise<void> {
    const requestId = settlement.data.requestId;
    let late: LateSettlement;
    try {
      const stream = await this.options.store.readStream(original.streamId);
      late = lateSettlementOf(stream, settlement, original.events[0]!.event.metadata);
      if (late.kind === "append") await this.options.store.append(late.append);
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
    let settlement: Settlement | undefined;
    try {
      const stream = await this.options.store.readStream(usageStreamIdOf(requestId));
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
