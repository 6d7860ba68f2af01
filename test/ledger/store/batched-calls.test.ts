import { describe, expect, it } from "vitest";
import { BatchedCalls } from "../../../src/ledger/store/batched-calls";

/** Group commit: which calls share a batch (one statement and one commit on the hot path). */

function recorded(batchSizeMax = 100) {
  const batches: number[][] = [];
  let release: (() => void) | undefined;
  let held = false;
  const calls = new BatchedCalls<number, number>(async (inputs) => {
    batches.push([...inputs]);
    if (held) await new Promise<void>((resolve) => (release = resolve));
    if (inputs.includes(-1)) throw new Error("the batch failed");
    return inputs.map((input) => ({ status: "fulfilled" as const, value: input * 10 }));
  }, batchSizeMax);
  return {
    calls,
    batches,
    hold: () => (held = true),
    releaseBatch: () => {
      held = false;
      release?.();
    },
  };
}

describe("batched calls", () => {
  it("send the calls of one turn of the event loop as one batch, each answered with its own outcome", async () => {
    const { calls, batches } = recorded();

    const answers = await Promise.all([1, 2, 3].map((input) => calls.call(input)));

    expect(batches).toEqual([[1, 2, 3]]);
    expect(answers).toEqual([10, 20, 30]);
  });

  it("gather the calls made while a batch is in flight into the next, up to the batch size", async () => {
    const { calls, batches, hold, releaseBatch } = recorded(2);
    hold();
    const first = calls.call(1);
    await new Promise((resolve) => setImmediate(resolve));
    const later = [2, 3, 4].map((input) => calls.call(input));

    releaseBatch();

    expect(await Promise.all([first, ...later])).toEqual([10, 20, 30, 40]);
    expect(batches).toEqual([[1], [2, 3], [4]]);
  });

  it("fail only the calls of a batch that throws; the next batch still runs", async () => {
    const { calls, batches, hold, releaseBatch } = recorded();
    hold();
    const failing = [calls.call(-1), calls.call(5)];
    await new Promise((resolve) => setImmediate(resolve));
    const next = calls.call(6);

    releaseBatch();

    for (const call of failing) await expect(call).rejects.toThrow(/the batch failed/);
    expect(await next).toBe(60);
    expect(batches).toEqual([[-1, 5], [6]]);
  });
});
