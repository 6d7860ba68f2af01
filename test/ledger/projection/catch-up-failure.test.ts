import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allProjections } from "../../../projections";
import type { ProjectionDefinition } from "../../../src/ledger/projection/projection";
import { ProjectionRunner } from "../../../src/ledger/projection/projection-runner";
import type { EventStore } from "../../../src/ledger/store/event-store";
import { topUp } from "../../support/ledger-fixtures";
import { type LedgerHarness, openLedgerHarness } from "../../support/ledger-harness";

/**
 * A catch-up (a leader's refold, as its term starts) reads the next batch while it applies one. When the
 * database goes away, both fail: the catch-up fails with the batch's error, and the read's failure, which
 * nobody awaits any more, must not become an unhandled rejection — that ends the worker process.
 */
describe("a catch-up whose batch fails while the next one is being read", () => {
  let harness: LedgerHarness;

  beforeAll(async () => {
    harness = await openLedgerHarness("catch_up_failure");
    for (let index = 0; index < 30; index++) {
      await harness.append({
        streamId: "account-user-catch-up",
        expectedVersion: "any",
        events: [topUp("catch-up", "1", `top-up ${index}`)],
      });
    }
    await harness.visible();
  });
  afterAll(async () => {
    await harness?.dispose();
  });

  it("given the read failing after the batch did, then the catch-up fails and nothing is left unhandled", async () => {
    // The database gone: the batch fails at once, the read of the next one a moment later.
    const failing: ProjectionDefinition = {
      name: "failing",
      version: 1,
      handles: new Set(["CreditToppedUp"]),
      tables: [],
      evolve: () => {
        throw new Error("the batch failed: the database went away");
      },
    };
    let reads = 0;
    const store: EventStore = Object.create(harness.store, {
      readAllHeads: {
        value: (options: Parameters<NonNullable<EventStore["readAllHeads"]>>[0]) => {
          reads++;
          if (reads === 1) return harness.store.readAllHeads!(options);
          return new Promise((_resolve, reject) =>
            setTimeout(() => reject(new Error("the read failed: the database went away")), 50),
          );
        },
      },
    });
    const runner = new ProjectionRunner({
      pool: harness.ledger.pool,
      connectionString: harness.database.url,
      store,
      projections: [...allProjections, failing],
      batchSizeMax: 10,
      standbyRetryMs: 100,
    });
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on("unhandledRejection", onUnhandled);
    const client = await harness.ledger.pool.connect();
    try {
      await runner.prepare(client);
      await expect(runner.catchUp(client)).rejects.toThrow(/the batch failed/);
      await new Promise((resolve) => setTimeout(resolve, 200));
    } finally {
      process.off("unhandledRejection", onUnhandled);
      client.release();
    }

    expect(reads).toBe(2);
    expect(unhandled).toEqual([]);
  });
});
