/**
 * Group commit for any batched call on the request hot path: calls that arrive while a batch is in flight
 * wait and go together in the next batch, one statement and one commit for all of them. Under light load
 * a batch is the calls of one turn of the event loop, with no added delay (the first flush waits for a
 * microtask, so a job's charges made in one `Promise.all` share their statement); under heavy load the
 * commit cost is shared.
 */
export class BatchedCalls<Input, Output> {
  private waiting: { input: Input; resolve: (output: Output) => void; reject: (error: unknown) => void }[] =
    [];
  private flushing = false;

  constructor(
    /** One outcome per input, in order. A throw fails the whole batch. */
    private readonly runBatch: (inputs: readonly Input[]) => Promise<PromiseSettledResult<Output>[]>,
    private readonly batchSizeMax: number,
  ) {}

  call(input: Input): Promise<Output> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ input, resolve, reject });
      if (!this.flushing) {
        this.flushing = true;
        queueMicrotask(() => void this.flush());
      }
    });
  }

  private async flush(): Promise<void> {
    try {
      while (this.waiting.length > 0) {
        const batch = this.waiting.splice(0, this.batchSizeMax);
        try {
          const outcomes = await this.runBatch(batch.map((entry) => entry.input));
          for (const [index, entry] of batch.entries()) {
            const outcome = outcomes[index]!;
            if (outcome.status === "fulfilled") entry.resolve(outcome.value);
            else entry.reject(outcome.reason);
          }
        } catch (error) {
          for (const entry of batch) entry.reject(error);
        }
      }
    } finally {
      this.flushing = false;
    }
  }
}
