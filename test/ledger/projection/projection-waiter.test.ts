import type pg from "pg";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { allProjectionNames } from "../../../projections";
import { checkpointChannel } from "../../../src/ledger/projection/projection-runner";
import { ProjectionWaiter } from "../../../src/ledger/projection/projection-waiter";
import { creditToppedUp, runProjectionRunner } from "../../billing/billing-ledger-fixtures";
import { type LedgerHarness, openLedgerHarness } from "../../support/ledger-harness";

/**
 * Read-your-writes without reading: the runner's notification after each batch names where its checkpoints
 * stand, so a waiter that has heard every batch since it last read waits for the announcement alone. It
 * reads when it may have missed one: at its start, after a notification that names nothing, after a
 * reconnect (listen-reconnect.test.ts).
 */

const account = { kind: "user" as const, id: "reader" };
/** Longer than any wait here: a wait answered within it was answered by a notification, not the poll. */
const pollIntervalMs = 60_000;
const waitMs = 10_000;
let sequence = 0;

describe("the projection waiter", () => {
  let harness: LedgerHarness;
  let runner: { stop(): Promise<void> };
  let waiter: ProjectionWaiter;
  let reads: number;

  beforeEach(async () => {
    harness = await openLedgerHarness(`projection_waiter${sequence++}`);
    runner = runProjectionRunner(harness);
    reads = 0;
    // The waiter queries with a config object only: count its checkpoint reads by their statement's name.
    const query = (config: pg.QueryConfig) => harness.ledger.pool.query(config);
    const counted: Pick<pg.Pool, "query"> = {
      query: ((config: pg.QueryConfig) => {
        if (config.name === "projection-checkpoints-read") reads += 1;
        return query(config);
      }) as pg.Pool["query"],
    };
    waiter = new ProjectionWaiter(counted, harness.database.url, pollIntervalMs);
    await waiter.start();
  });

  afterEach(async () => {
    await waiter.close();
    await runner.stop();
    await harness.dispose();
  });

  const topUpAndWait = async () => {
    const appended = await harness.store.append(creditToppedUp(account, "1", "2026-11-20T00:00:00.000Z"));
    await waiter.waitFor(appended.position, allProjectionNames, waitMs);
    return appended;
  };

  const balance = async () =>
    (
      await harness.ledger.pool.query<{ balance_won: string }>(
        "SELECT balance_won::text FROM projection_balances",
      )
    ).rows[0]?.balance_won;

  it("reads the checkpoints once, then learns them from the batches' notifications", async () => {
    // Given: a waiter that has read the checkpoints once (it knows nothing at its start)
    await topUpAndWait();
    expect(reads).toBe(1);

    // When: more writes are waited for, one by one and side by side
    for (let round = 0; round < 5; round++) await topUpAndWait();
    await Promise.all(Array.from({ length: 5 }, () => topUpAndWait()));

    // Then: every wait ended on what it had applied, and none read the checkpoints again
    expect(await balance()).toBe("11");
    expect(reads).toBe(1);
  });

  it("reads again once a notification named no checkpoint, then trusts the notifications again", async () => {
    // Given: a waiter that knows the checkpoints
    await topUpAndWait();
    const readsBefore = reads;

    // When: a notification says "anything may have changed" (a runner of an earlier release, a wide batch)
    await harness.ledger.pool.query("SELECT pg_notify($1, '')", [checkpointChannel]);
    await topUpAndWait();
    await topUpAndWait();

    // Then: the first wait after it read the checkpoints, the next did not
    expect(reads).toBe(readsBefore + 1);
    expect(await balance()).toBe("3");
  });
});
