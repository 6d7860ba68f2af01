import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import { type StreamAppend, WrongExpectedVersionError } from "../../ledger/event-store";
import type { EventData } from "../../ledger/events";
import type { GroupCommitAppender } from "../../ledger/group-commit-appender";
import type { ChargeEnqueuer } from "../charge-enqueuer";

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
   * Resolves once the settlements of this account being written now are written (or after `timeoutMs`);
   * false at once when there are none. A hold refused while they were on their way may fit after them.
   */
  async settledFor(account: { kind: string; id: string }, timeoutMs: number): Promise<boolean> {
    const writing = this.writingByAccount.get(`${account.kind}:${account.id}`);
    if (!writing || writing.size === 0) return false;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all(writing),
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
    const requestId = settlement.data.requestId;
    const append: StreamAppend = {
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
    this.waitingCount += 1;
    const accountKey = `${settlement.data.account.kind}:${settlement.data.account.id}`;
    const writing = this.writingByAccount.get(accountKey) ?? new Set();
    this.writingByAccount.set(accountKey, writing);
    const written = new Promise<void>((resolve) => void this.attempt(append, settlement, 0, resolve));
    writing.add(written);
    void written.then(() => {
      writing.delete(written);
      if (writing.size === 0) this.writingByAccount.delete(accountKey);
    });
  }

  private async attempt(
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
        this.options.logger.warn(
          { requestId, settlement: settlement.type },
          "the hold was settled elsewhere first (orphan sweep); this settlement is dropped",
        );
      } else {
        const delays = this.options.retryDelaysMs;
        const delayMs = delays[Math.min(attempt, delays.length - 1)]!;
        if (attempt === 0 || attempt % 10 === 0)
          this.options.logger.warn(
            { err: error, requestId, settlement: settlement.type, attempt },
            "settling a request's hold failed; retrying",
          );
        setTimeout(() => void this.attempt(append, settlement, attempt + 1, written), delayMs).unref();
        return;
      }
    }
    this.waitingCount -= 1;
    written();
    if (this.waitingCount === 0) {
      for (const done of [...this.idle]) done();
      this.idle.clear();
    }
  }
}
