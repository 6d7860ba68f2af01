import type { AppendResult, EventStore, StreamAppend } from "./event-store";

/**
 * Group commit for the request hot path: appends that arrive while a batch is being written wait and go
 * together in the next batch, one statement and one commit for all of them. Under light load a batch is a
 * single append with no added delay; under heavy load the commit cost is shared.
 */
export class GroupCommitAppender {
  private waiting: {
    append: StreamAppend;
    resolve: (result: AppendResult) => void;
    reject: (error: unknown) => void;
  }[] = [];
  private flushing = false;

  constructor(
    private readonly store: EventStore,
    private readonly batchSizeMax: number,
  ) {}

  append(append: StreamAppend): Promise<AppendResult> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ append, resolve, reject });
      if (!this.flushing) void this.flush();
    });
  }

  private async flush(): Promise<void> {
    this.flushing = true;
    try {
      while (this.waiting.length > 0) {
        const batch = this.waiting.splice(0, this.batchSizeMax);
        try {
          const outcomes = await this.store.appendBatch(batch.map((entry) => entry.append));
          outcomes.forEach((outcome, index) => {
            const entry = batch[index]!;
            if (outcome.status === "fulfilled") entry.resolve(outcome.value);
            else entry.reject(outcome.reason);
          });
        } catch (error) {
          for (const entry of batch) entry.reject(error);
        }
      }
    } finally {
      this.flushing = false;
    }
  }
}
