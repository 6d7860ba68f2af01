import type { AccountReference } from "../../ledger/events";
import { BatchedCalls } from "../../ledger/store/batched-calls";
import {
  AccountRowsLockedError,
  type UsageAuthorizationDecision,
  type UsageAuthorizationRequest,
  type UsageAuthorizations,
} from "./usage-authorizations";

/**
 * Places holds in batches: the holds asked for while a batch is in flight go together in the next one,
 * one statement and one commit for all of them. Under heavy load — one hot account at many connections
 * above all — the account's row is locked once per batch rather than once per request.
 *
 * Two kinds of batch, by what must be durable before the first byte leaves (C10):
 * - a stream's first bytes leave before its usage exists, so its hold's commit waits for the WAL flush;
 * - a JSON answer leaves only once its usage is durably recorded, by a synchronous commit that flushes the
 *   WAL up to and past the hold; its hold's commit need not wait: one fsync wait per JSON request, not two.
 *
 * One batch of each kind is in flight at a time, so a batch waiting for an account's row would hold up
 * every account's holds: a row kept by a transaction left open (an operator's `SELECT … FOR UPDATE`). So a
 * statement waits for rows only so long (AccountRowsLockedError), and the accounts of a batch that gave up
 * are set apart: each in batches of its own, until one of them is placed. Every request of the batch is
 * asked again there, so an account whose row was free is placed at once; a request on the held account is
 * refused once its own account's batch gives up too, or at once when it waited behind one that did. A
 * request on a held account is thus answered within two statements' waits, and the others wait one at most.
 */

type DurableBy = "hold-commit" | "usage-commit";

/** A request to place, and when it was asked for. */
interface Asked {
  request: UsageAuthorizationRequest;
  askedAtMs: number;
}

type Lanes = Record<DurableBy, BatchedCalls<Asked, UsageAuthorizationDecision>>;

/** Told to a request of a batch whose account was set apart meanwhile: it is asked again in that account's lanes. */
class SetApart extends Error {
  override readonly name = "SetApart";
}

/** An account set apart: its lanes, and when a statement last gave up waiting for its row. */
interface Apart {
  lanes: Lanes;
  lockedAtMs: number | undefined;
}

export class HoldAuthorizer {
  private readonly shared: Lanes;
  /** Accounts set apart (bounded: a hint, forgotten whole past the bound). */
  private readonly apart = new Map<string, Apart>();

  constructor(
    private readonly ledger: UsageAuthorizations,
    private readonly batchSizeMax: number,
    private readonly accountsApartMax: number,
    private readonly clockMs: () => number = Date.now,
  ) {
    this.shared = this.lanesOf((asked, waitForFlush) => this.placeShared(asked, waitForFlush));
  }

  /** Whether the account's holds are placed apart (its row was held a moment ago): they should go first. */
  isSetApart(account: AccountReference): boolean {
    return this.apart.has(`${account.kind}:${account.id}`);
  }

  /** `durableBy`: whether the hold must be durable by its own commit, or by its usage's (see above). */
  authorize(request: UsageAuthorizationRequest, durableBy: DurableBy): Promise<UsageAuthorizationDecision> {
    const asked = { request, askedAtMs: this.clockMs() };
    const apart = this.apart.get(accountKeyOf(request));
    if (apart) return apart.lanes[durableBy].call(asked);
    return this.shared[durableBy].call(asked).catch((error: unknown) => {
      if (!(error instanceof AccountRowsLockedError || error instanceof SetApart)) throw error;
      return this.setApart(accountKeyOf(request)).lanes[durableBy].call(asked);
    });
  }

  private async placeShared(
    batch: readonly Asked[],
    waitForFlush: boolean,
  ): Promise<PromiseSettledResult<UsageAuthorizationDecision>[]> {
    // Set apart while this batch waited: asked again in the account's lanes, not with the others.
    const placing = batch.filter((asked) => !this.apart.has(accountKeyOf(asked.request)));
    const decisions = await this.place(placing, waitForFlush).catch((error: unknown) => {
      // Which account's row it was, the database does not say: each is set apart now, before the next
      // batch is taken, so that none of them holds up that batch.
      if (error instanceof AccountRowsLockedError)
        for (const asked of placing) this.setApart(accountKeyOf(asked.request));
      throw error;
    });
    return batch.map((asked) => decisions.get(asked) ?? { status: "rejected", reason: new SetApart() });
  }

  private async placeApart(
    account: string,
    apart: Apart,
    batch: readonly Asked[],
    waitForFlush: boolean,
  ): Promise<PromiseSettledResult<UsageAuthorizationDecision>[]> {
    // Those that waited behind a statement that gave up on the row are refused with it, not made to wait again.
    const lockedAtMs = apart.lockedAtMs;
    const waitedBehind = (asked: Asked) => lockedAtMs !== undefined && asked.askedAtMs <= lockedAtMs;
    const placing = batch.filter((asked) => !waitedBehind(asked));
    try {
      const decisions = await this.place(placing, waitForFlush);
      // The row was free: the account's holds go with the others' again.
      if (placing.length > 0 && this.apart.get(account) === apart) this.apart.delete(account);
      const locked = new AccountRowsLockedError(`the row of ${account} was held a moment ago`);
      return batch.map((asked) => decisions.get(asked) ?? { status: "rejected", reason: locked });
    } catch (error) {
      if (error instanceof AccountRowsLockedError) apart.lockedAtMs = this.clockMs();
      throw error;
    }
  }

  /** One statement for `batch` (none when it is empty): each request's decision, by request. */
  private async place(
    batch: readonly Asked[],
    waitForFlush: boolean,
  ): Promise<Map<Asked, PromiseSettledResult<UsageAuthorizationDecision>>> {
    if (batch.length === 0) return new Map();
    const decisions = await this.ledger.authorizeUsage(
      batch.map((asked) => asked.request),
      { waitForFlush },
    );
    return new Map(batch.map((asked, index) => [asked, { status: "fulfilled", value: decisions[index]! }]));
  }

  private setApart(account: string): Apart {
    const existing = this.apart.get(account);
    if (existing) return existing;
    if (this.apart.size >= this.accountsApartMax) this.apart.clear();
    const apart: Apart = {
      lanes: this.lanesOf((batch, waitForFlush) => this.placeApart(account, apart, batch, waitForFlush)),
      lockedAtMs: undefined,
    };
    this.apart.set(account, apart);
    return apart;
  }

  private lanesOf(
    place: (
      batch: readonly Asked[],
      waitForFlush: boolean,
    ) => Promise<PromiseSettledResult<UsageAuthorizationDecision>[]>,
  ): Lanes {
    return {
      "hold-commit": new BatchedCalls((batch) => place(batch, true), this.batchSizeMax),
      "usage-commit": new BatchedCalls((batch) => place(batch, false), this.batchSizeMax),
    };
  }
}

function accountKeyOf(request: UsageAuthorizationRequest): string {
  return `${request.data.account.kind}:${request.data.account.id}`;
}
