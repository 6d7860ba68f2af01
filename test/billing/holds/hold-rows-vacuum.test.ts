import { randomUUID } from "node:crypto";
import { Writable } from "node:stream";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HoldRowsVacuum } from "../../../src/billing/holds/hold-rows-vacuum";
import { SettledHoldsLog } from "../../../src/billing/holds/settled-holds-log";
import type { UsageAuthorizationRequest } from "../../../src/billing/holds/usage-authorizations";
import { PostgresEventStore } from "../../../src/ledger/store/postgres-event-store";
import { topUp } from "../../support/ledger-fixtures";
import { type LedgerHarness, openLedgerHarness } from "../../support/ledger-harness";
import { holdRowCompletionOf } from "../../support/settled-holds";
import { personalHoldRequest, usageAuthorizationsOf } from "../../support/usage-authorizations";

/**
 * The hold rows' table is vacuumed by the processes that empty it, not only by autovacuum's visit once a
 * minute: a removed row left in it is one more page every hold on its account visits.
 */

const account = { kind: "user" as const, id: "vacuum-holds" };
const silent = pino({ level: "silent" });

function holdOf(): UsageAuthorizationRequest {
  return personalHoldRequest(`req_vacuum_${randomUUID()}`, account.id, {
    gatewayInstance: "gateway-vacuum-holds",
  });
}

describe("vacuuming the hold rows", () => {
  let harness: LedgerHarness;

  beforeAll(async () => {
    harness = await openLedgerHarness("hold_rows_vacuum");
    await harness.append({
      streamId: `account-user-${account.id}`,
      expectedVersion: "no-stream",
      events: [topUp(account.id, "1000", "vacuum holds")],
    });
  }, 60_000);
  afterAll(async () => {
    await harness?.dispose();
  });

  async function vacuumCount(): Promise<number> {
    const result = await harness.ledger.pool.query<{ count: string }>(
      "SELECT vacuum_count AS count FROM pg_stat_user_tables WHERE relname = 'request_holds'",
    );
    return Number(result.rows[0]!.count);
  }

  /** Holds placed and voided, so that the log writer has rows to log and remove. */
  async function settledHolds(count: number): Promise<string[]> {
    const holds = Array.from({ length: count }, holdOf);
    const decisions = await usageAuthorizationsOf(harness.ledger.pool, harness.store).authorizeUsage(holds);
    expect(decisions.every((decision) => decision.kind === "held")).toBe(true);
    const completion = holdRowCompletionOf(harness.ledger.pool);
    for (const hold of holds)
      expect(await completion.voidIfOpen(hold.data.requestId, randomUUID(), { actor: "test" })).toBe(true);
    return holds.map((hold) => hold.data.requestId);
  }

  it("given a batch logged, then the log writer tells the vacuum how many rows it removed", async () => {
    const store = harness.store;
    if (!(store instanceof PostgresEventStore)) throw new Error("hold rows need the PostgreSQL event store");
    const removed: number[] = [];
    const log = new SettledHoldsLog({
      pool: harness.ledger.pool,
      log: store.appendsBeside,
      enqueueCharges: () => {},
      vacuum: { removed: (rows) => void removed.push(rows) },
      logger: silent,
      batchSizeMax: 500,
      pollIntervalMs: 60_000,
      lingerMs: 0,
    });
    const requestIds = await settledHolds(3);

    await log.writeBatch(requestIds);
    await log.writeBatch(requestIds);

    expect(removed).toEqual([3]);
    const left = await harness.ledger.pool.query("SELECT 1 FROM request_holds WHERE request_id = ANY ($1)", [
      requestIds,
    ]);
    expect(left.rowCount).toBe(0);
  });

  it("given fewer rows removed than call for one, then it does not vacuum; given enough, it does", async () => {
    const vacuum = new HoldRowsVacuum({
      pool: harness.ledger.pool,
      rowsPerVacuum: 5,
      intervalMinMs: 0,
      logger: silent,
    });
    const before = await vacuumCount();

    expect(vacuum.removed(4)).toBeUndefined();
    const started = vacuum.removed(1);

    expect(started).toBeDefined();
    await started;
    expect(await vacuumCount()).toBe(before + 1);
    await vacuum.close();
  });

  it("given rows removed again within the interval, then it waits for the interval before the next vacuum", async () => {
    let nowMs = 0;
    const vacuum = new HoldRowsVacuum({
      pool: harness.ledger.pool,
      rowsPerVacuum: 1,
      intervalMinMs: 1_000,
      logger: silent,
      now: () => nowMs,
    });
    const before = await vacuumCount();

    await vacuum.removed(2);
    nowMs = 999;
    expect(vacuum.removed(2)).toBeUndefined();
    nowMs = 1_000;
    await vacuum.removed(0);

    expect(await vacuumCount()).toBe(before + 2);
    await vacuum.close();
    expect(vacuum.removed(10)).toBeUndefined();
  });

  it("given the database failing, then the failure is logged, never thrown at the log writer", async () => {
    const lines: string[] = [];
    const logger = pino(
      new Writable({
        write(chunk, _encoding, done) {
          lines.push(String(chunk));
          done();
        },
      }),
    );
    const vacuum = new HoldRowsVacuum({
      pool: { query: () => Promise.reject(new Error("connection terminated")) },
      rowsPerVacuum: 1,
      intervalMinMs: 0,
      logger,
    });

    await expect(vacuum.removed(1)).resolves.toBeUndefined();

    expect(lines.map((line) => JSON.parse(line).msg)).toEqual(["vacuuming the hold rows failed"]);
    expect(lines[0]).toContain("connection terminated");
    await vacuum.close();
  });
});
