import { RowsLockedError } from "../../database/lock-wait";
import { assert } from "../../kernel/assert";
import { accountNameOf, accountTouchedBy } from "../events";
import { BatchedCalls } from "./batched-calls";
import type { AppendResult, EventStore, StreamAppend } from "./event-store";

/**
 * Group commit (group-commit-appender.ts) for appends that move accounts' funds rows — the workers' charges —
 * whose statements wait at most `lockWaitMs` for each lock (`AppendBatchOptions`). One batch is in flight at
 * a time and it mixes accounts, so a batch waiting for one account's row (a transaction left open on it: an
 * operator's `SELECT … FOR UPDATE`) would hold up every account's appends for as long as it lasts.
 *
 * So, as hold-authorizer.ts does with holds, the accounts of a batch that gave up are set apart: each
 * account's appends are asked again in batches of their own, so an account whose row was free is appended at
 * once, and the held account's are refused (RowsLockedError) once its own batch gives up, or at once when they
 * waited behind one that did; their caller tries again later (the charge job's backoff). An account rejoins
 * the others once a batch of its own is appended. Which account's row it was, the database does not say.
 */

interface Asked {
  append: StreamAppend;
  /** The account the append's events move (a usage stream's one account); undefined: none. */
  account: string | undefined;
  askedAtMs: number;
}

/** Told to an append of a batch whose account was set apart meanwhile: it is asked again in that account's lane. */
class SetApart extends Error {
  override readonly name = "SetApart";
}

/** An account set apart: its lane, and when a batch of its own last gave up waiting for its row. */
interface Apart {
  lane: BatchedCalls<Asked, AppendResult>;
  lockedAtMs: number | undefined;
}

export interface LockBoundedAppenderOptions {
  batchSizeMax: number;
  lockWaitMs: number;
  /** Accounts set apart at once (a hint: forgotten whole past the bound). */
  accountsApartMax: number;
  clockMs?: () => number;
}

export class LockBoundedAppender {
  private readonly shared: BatchedCalls<Asked, AppendResult>;
  private readonly apart = new Map<string, Apart>();
  private readonly clockMs: () => number;

  constructor(
    private readonly store: Pick<EventStore, "appendBatch">,
    private readonly options: LockBoundedAppenderOptions,
  ) {
    this.clockMs = options.clockMs ?? Date.now;
    this.shared = new BatchedCalls((batch) => this.appendShared(batch), options.batchSizeMax);
  }

  /** Rejects with RowsLockedError when its account's row stayed taken past the bound (nothing appended). */
  append(append: StreamAppend): Promise<AppendResult> {
    const asked: Asked = { append, account: accountOfAppend(append), askedAtMs: this.clockMs() };
    const { account } = asked;
    if (account === undefined) return this.shared.call(asked);
    const apart = this.apart.get(account);
    if (apart) return apart.lane.call(asked);
    return this.shared.call(asked).catch((error: unknown) => {
      if (!(error instanceof RowsLockedError || error instanceof SetApart)) throw error;
      return this.setApart(account).lane.call(asked);
    });
  }

  private async appendShared(batch: readonly Asked[]): Promise<PromiseSettledResult<AppendResult>[]> {
    // Set apart while this batch waited: asked again in the account's lane, not with the others.
    const appending = batch.filter((asked) => asked.account === undefined || !this.apart.has(asked.account));
    const outcomes = await this.appendNow(appending).catch((error: unknown) => {
      // Each account is set apart now, before the next batch is taken, so that none of them holds it up.
      if (error instanceof RowsLockedError)
        for (const { account } of appending) if (account !== undefined) this.setApart(account);
      throw error;
    });
    return batch.map((asked) => outcomes.get(asked) ?? { status: "rejected", reason: new SetApart() });
  }

  private async appendApart(
    account: string,
    apart: Apart,
    batch: readonly Asked[],
  ): Promise<PromiseSettledResult<AppendResult>[]> {
    // Those that waited behind a batch that gave up on the row are refused with it, not made to wait again.
    const lockedAtMs = apart.lockedAtMs;
    const appending = batch.filter((asked) => lockedAtMs === undefined || asked.askedAtMs > lockedAtMs);
    try {
      const outcomes = await this.appendNow(appending);
      const gaveUp = [...outcomes.values()].some(
        (outcome) => outcome.status === "rejected" && outcome.reason instanceof RowsLockedError,
      );
      if (gaveUp) apart.lockedAtMs = this.clockMs();
      // The row was free: the account's appends go with the others' again.
      else if (appending.length > 0 && this.apart.get(account) === apart) this.apart.delete(account);
      const locked = new RowsLockedError(`the row of ${account} was held a moment ago`);
      return batch.map((asked) => outcomes.get(asked) ?? { status: "rejected", reason: locked });
    } catch (error) {
      if (error instanceof RowsLockedError) apart.lockedAtMs = this.clockMs();
      throw error;
    }
  }

  /** One batch of the store (none when `batch` is empty): each append's outcome, by append. */
  private async appendNow(batch: readonly Asked[]): Promise<Map<Asked, PromiseSettledResult<AppendResult>>> {
    if (batch.length === 0) return new Map();
    const outcomes = await this.store.appendBatch(
      batch.map((asked) => asked.append),
      { lockWaitMs: this.options.lockWaitMs },
    );
    assert(outcomes.length === batch.length, `${outcomes.length} outcomes for ${batch.length} appends`);
    return new Map(batch.map((asked, index) => [asked, outcomes[index]!]));
  }

  private setApart(account: string): Apart {
    const existing = this.apart.get(account);
    if (existing) return existing;
    if (this.apart.size >= this.options.accountsApartMax) this.apart.clear();
    const apart: Apart = {
      lane: new BatchedCalls((batch) => this.appendApart(account, apart, batch), this.options.batchSizeMax),
      lockedAtMs: undefined,
    };
    this.apart.set(account, apart);
    return apart;
  }
}

/** The account an append's events move: its first event's that names one (a stream's events name the same). */
function accountOfAppend(append: StreamAppend): string | undefined {
  for (const { event } of append.events) {
    const account = accountTouchedBy(event);
    if (account) return accountNameOf(account);
  }
  return undefined;
}
