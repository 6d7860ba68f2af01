import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allProjections } from "../../../projections";
import { readUnpriceablePending } from "../../../src/billing/read-models/unpriceable-pending-charges";
import { readMonthlyStatement } from "../../../src/billing/statements/monthly-statement";
import type { ProjectionDefinition } from "../../../src/ledger/projection/projection";
import { ProjectionRunner } from "../../../src/ledger/projection/projection-runner";
import { verifyProjections } from "../../../src/ledger/verify-projections";
import { usageRecorded } from "../../billing/billing-ledger-fixtures";
import { topUp, usageCharge } from "../../support/ledger-fixtures";
import { type LedgerHarness, openLedgerHarness } from "../../support/ledger-harness";
import { eventually } from "../../workers/queue-test-support";

/**
 * A projection whose definition changed is refolded into a new table swapped in by the transaction that
 * starts the next leader's term (or by `ledger rebuild`). A reader in a snapshot of several reads — a monthly
 * statement, a verify run — or one statement over several (the usage of an account's view nothing prices) that
 * meets that swap must see the old rows or the new ones,
 * never a table that looks empty because its rows were written after the reader's snapshot.
 */
describe("readers of one snapshot while a refold swaps their tables in", () => {
  let harness: LedgerHarness;
  const account = { kind: "user", id: "refold-reader" } as const;
  const now = new Date("2026-12-15T00:00:00.000Z");

  beforeAll(async () => {
    harness = await openLedgerHarness("refold_readers");
    await harness.append({
      streamId: `account-user-${account.id}`,
      expectedVersion: "no-stream",
      events: [topUp(account.id, "1000", "opening")],
    });
    await harness.append(usageCharge(account, "refold-reader-1", "2026-11-10T03:00:00.000Z", "12.5"));
    await harness.append(usageCharge(account, "refold-reader-2", "2026-11-11T03:00:00.000Z", "7.25"));
    await harness.append(
      usageRecorded({
        requestId: "refold-reader-3",
        account,
        startedAt: "2026-11-12T03:00:00.000Z",
        model: "retired-model",
      }),
    );
    await harness.project();
  }, 60_000);
  afterAll(async () => {
    await harness?.dispose();
  });

  /** Each test bumps more definitions; those bumped before stay bumped (none is ever folded back). */
  const bumps = new Map<string, number>();
  const bumped = (names: readonly string[]): ProjectionDefinition[] => {
    for (const name of names) bumps.set(name, (bumps.get(name) ?? 0) + 1);
    return allProjections.map((projection) => ({
      ...projection,
      version: projection.version + (bumps.get(projection.name) ?? 0),
    }));
  };

  /**
   * Refolds the named projections in a transaction that stays open once their tables are swapped; starts the
   * read; commits once the read waits behind the swap; returns what the read gave.
   */
  async function readDuringRefold<T>(
    names: readonly string[],
    read: (projections: readonly ProjectionDefinition[]) => Promise<T>,
  ): Promise<T> {
    const projections = bumped(names);
    const runner = new ProjectionRunner({
      pool: harness.ledger.pool,
      connectionString: harness.database.url,
      store: harness.store,
      projections,
      batchSizeMax: 1_000,
      standbyRetryMs: 100,
    });
    const refolding: pg.PoolClient = await harness.ledger.pool.connect();
    try {
      await refolding.query("BEGIN");
      expect(await runner.prepare(refolding, "sql")).toBe(true);
      const reading = read(projections);
      await eventually("the read waits behind the swap", async () => {
        const waiting = await harness.ledger.pool.query(
          `SELECT 1 FROM pg_stat_activity
           WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> $1`,
          [(refolding as unknown as { processID: number }).processID],
        );
        return waiting.rows.length > 0;
      });
      await refolding.query("COMMIT");
      return await reading;
    } catch (error) {
      await refolding.query("ROLLBACK").catch(() => {});
      throw error;
    } finally {
      refolding.release();
    }
  }

  it("given the monthly statements refolded, then a statement read meanwhile is the statement, not an empty month", async () => {
    const before = await readMonthlyStatement(harness.ledger.pool, account, "2026-11", now);
    expect(before.chargesWon).toBe("19.75");

    const during = await readDuringRefold(["monthly-statements"], () =>
      readMonthlyStatement(harness.ledger.pool, account, "2026-11", now),
    );

    expect(during).toEqual(before);
  });

  it("given the pending charges, prices and FX rates refolded, then the usage nothing prices, read meanwhile, is named", async () => {
    const before = await readUnpriceablePending(harness.ledger.pool, account);
    expect(before).toEqual([
      {
        model: "retired-model",
        reason: "unknown-model",
        requests: 1,
        oldestStartedAt: "2026-11-12T03:00:00.000Z",
      },
    ]);

    const during = await readDuringRefold(["balances", "prices", "fx-rates"], () =>
      readUnpriceablePending(harness.ledger.pool, account),
    );

    expect(during).toEqual(before);
  });

  it("given every projection rebuilt, then a verify run meanwhile finds no difference", async () => {
    const names = allProjections.map((projection) => projection.name);

    const differences = await readDuringRefold(names, (projections) =>
      verifyProjections({ pool: harness.ledger.pool, store: harness.store, projections }),
    );

    expect(differences).toEqual([]);
  });
});
