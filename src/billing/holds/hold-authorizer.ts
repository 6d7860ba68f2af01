import { BatchedCalls } from "../../ledger/store/batched-calls";
import type {
  UsageAuthorizationDecision,
  UsageAuthorizationRequest,
} from "../../ledger/store/postgres-event-store";

/**
 * Places holds in batches: the holds asked for while a batch is in flight go together in the next one,
 * one statement and one commit for all of them. Under heavy load — one hot account at many connections
 * above all — the account's row is locked once per batch rather than once per request.
 */

export interface UsageAuthorizations {
  authorizeUsage(requests: readonly UsageAuthorizationRequest[]): Promise<UsageAuthorizationDecision[]>;
}

export class HoldAuthorizer {
  private readonly batches: BatchedCalls<UsageAuthorizationRequest, UsageAuthorizationDecision>;

  constructor(ledger: UsageAuthorizations, batchSizeMax: number) {
    this.batches = new BatchedCalls(
      async (requests) =>
        (await ledger.authorizeUsage(requests)).map((value) => ({ status: "fulfilled", value })),
      batchSizeMax,
    );
  }

  authorize(request: UsageAuthorizationRequest): Promise<UsageAuthorizationDecision> {
    return this.batches.call(request);
  }
}
