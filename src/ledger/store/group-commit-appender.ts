import { BatchedCalls } from "./batched-calls";
import type { AppendResult, EventStore, StreamAppend } from "./event-store";

/** Appends on the request hot path, group-committed: concurrent appends share one statement and commit. */
export class GroupCommitAppender {
  private readonly batches: BatchedCalls<StreamAppend, AppendResult>;

  constructor(store: EventStore, batchSizeMax: number) {
    this.batches = new BatchedCalls((appends) => store.appendBatch(appends), batchSizeMax);
  }

  append(append: StreamAppend): Promise<AppendResult> {
    return this.batches.call(append);
  }
}
