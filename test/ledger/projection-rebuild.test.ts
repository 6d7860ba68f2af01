import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allProjections } from "../../projections";
import { balanceChecksum, rebuildProjections, verifyProjections } from "../../src/ledger/ledger-maintenance";
import { topUp } from "../support/ledger-fixtures";
import { type LedgerHarness, openLedgerHarness } from "../support/ledger-harness";
import { appendSyntheticLedger } from "../support/synthetic-ledger";

describe("rebuilding projections with bounded memory", () => {
  let harness: LedgerHarness;

  beforeAll(async () => {
    harness = await openLedgerHarness("rebuild");
    await appendSyntheticLedger(harness.store, { eventCount: 12_000, seed: 5, userCount: 60 });
    await harness.append({
      streamId: "account-user-tab",
      expectedVersion: "no-stream",
      // COPY's text format escapes these; the row must come back the same.
      events: [topUp("tab", "3", "a\ttab, a\\backslash,\na newline")],
    });
    await harness.project();
  }, 120_000);
  afterAll(async () => {
    await harness?.dispose();
  });

  it("gives the live runner's balances when the fold writes its rows out many times over", async () => {
    const live = await balanceChecksum(harness.ledger.pool);
    const context = { pool: harness.ledger.pool, store: harness.store, projections: allProjections };
    const progress: number[] = [];

    const rebuilt = await rebuildProjections(context, {
      batchSizeMax: 700,
      // Far fewer rows than the projections hold: every page after the first loads and merges.
      rowsInMemoryMax: 300,
      onProgress: (applied) => progress.push(applied),
    });

    expect(rebuilt.checksum).toEqual(live);
    expect(rebuilt.eventCount).toBeGreaterThanOrEqual(12_000);
    expect(progress.length).toBeGreaterThan(10);
    expect(progress[progress.length - 1]).toBe(rebuilt.eventCount);
    expect(await verifyProjections(context)).toEqual([]);
  });

  it("leaves the projections readable and indexed as the runner created them", async () => {
    const indexes = await harness.ledger.pool.query<{ indexname: string }>(
      "SELECT indexname FROM pg_indexes WHERE tablename LIKE 'projection\\_%' ORDER BY indexname",
    );
    const names = indexes.rows.map((row) => row.indexname);
    expect(names).toContain("projection_balances_pkey");
    expect(names).toContain("projection_active_keys_hash");
    expect(names).toContain("projection_pending_charges_account");
    expect(names.filter((name) => name.includes("__rebuild"))).toEqual([]);
    // The runner picks up from the rebuilt checkpoints.
    await harness.append({
      streamId: "account-user-after",
      expectedVersion: "no-stream",
      events: [topUp("after", "7", "x")],
    });
    await harness.project();
  });
});
