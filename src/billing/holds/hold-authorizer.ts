import { BatchedCalls } from "../../ledger/store/batched-calls";
import type {
  UsageAuthorizationDecision,
  UsageAuthorizationRequest,
} from "../../ledger/store/postgres-event-store";

/**
 * Places holds in batches: the holds asked for while a batch is in flight go together in the next one,
 * one statement and one commit for all of them. Under heavy load — one hot account at many connections
 * above all — the account's row is locked once per batch rather than once per request.
 *
 * Two kinds of batch, by what must be durable before the first byte leaves (C10):
 * - a stream's first bytes leave before its usage exists, so its hold's commit waits for the WAL flush;
 * - a JSON answer leaves only once its usage is durably recorded, by a synchronous commit that flushes the
 *   WAL up to and past the hold; its hold's commit need not wait: one fsync wait per JSON request, not two.
 */

export interface UsageAuthorizations {
  authorizeUsage(
    requests: readonly UsageAuthorizationRequest[],
    commit: { waitForFlush: boolean },
  ): Promise<UsageAuthorizationDecision[]>;
}

export class HoldAuthorizer {
  private readonly flushed: BatchedCalls<UsageAuthorizationRequest, UsageAuthorizationDecision>;
  private readonly flushedLater: BatchedCalls<UsageAuthorizationRequest, UsageAuthorizationDecision>;

  constructor(ledger: UsageAuthorizations, batchSizeMax: number) {
    const batchesOf = (waitForFlush: boolean) =>
      new BatchedCalls<UsageAuthorizationRequest, UsageAuthorizationDecision>(
        async (requests) =>
          (await ledger.authorizeUsage(requests, { waitForFlush })).map((value) => ({
            status: "fulfilled",
            value,
          })),
        batchSizeMax,
      );
    this.flushed = batchesOf(true);
    this.flushedLater = batchesOf(false);
  }

  /** `durableBy`: whether the hold must be durable by its own commit, or by its usage's (see above). */
  authorize(
    request: UsageAuthorizationRequest,
    durableBy: "hold-commit" | "usage-commit",
  ): Promise<UsageAuthorizationDecision> {
    return (durableBy === "hold-commit" ? this.flushed : this.flushedLater).call(request);
  }
}
