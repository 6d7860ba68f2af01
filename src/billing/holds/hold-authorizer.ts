import type {
  UsageAuthorizationDecision,
  UsageAuthorizationRequest,
} from "../../ledger/postgres-event-store";

/**
 * Places holds in batches: the holds asked for while a batch is in flight go together in the next one,
 * one statement and one commit for all of them. Under light load a batch is one hold with no added delay;
 * under heavy load — one hot account at many connections above all — the account's row is locked once
 * per batch rather than once per request.
 */

export interface UsageAuthorizations {
  authorizeUsage(requests: readonly UsageAuthorizationRequest[]): Promise<UsageAuthorizationDecision[]>;
}

interface Waiting {
  request: UsageAuthorizationRequest;
  resolve: (decision: UsageAuthorizationDecision) => void;
  reject: (error: unknown) => void;
}

export class HoldAuthorizer {
  private waiting: Waiting[] = [];
  private flushing = false;

  constructor(
    private readonly ledger: UsageAuthorizations,
    private readonly batchSizeMax: number,
  ) {}

  authorize(request: UsageAuthorizationRequest): Promise<UsageAuthorizationDecision> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ request, resolve, reject });
      if (!this.flushing) void this.flush();
    });
  }

  private async flush(): Promise<void> {
    this.flushing = true;
    try {
      while (this.waiting.length > 0) {
        const batch = this.waiting.splice(0, this.batchSizeMax);
        try {
          const decisions = await this.ledger.authorizeUsage(batch.map((entry) => entry.request));
          for (const [index, entry] of batch.entries()) entry.resolve(decisions[index]!);
        } catch (error) {
          for (const entry of batch) entry.reject(error);
        }
      }
    } finally {
      this.flushing = false;
    }
  }
}
