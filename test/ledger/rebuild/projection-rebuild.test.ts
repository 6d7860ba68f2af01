import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { appendSyntheticLedger } from "../../../bench/support/synthetic-ledger";
import { allProjections } from "../../../projections";
import {
  balanceChecksum,
  type RebuildFold,
  rebuildProjections,
} from "../../../src/ledger/ledger-maintenance";
import { chunksOf } from "../../../src/ledger/rebuild/rebuild-in-sql";
import { verifyProjections } from "../../../src/ledger/verify-projections";
import { topUp } from "../../support/ledger-fixtures";
import { type LedgerHarness, openLedgerHarness } from "../../support/ledger-harness";

describe("rebuilding projections with bounded memory, in memory or in SQL", () => {
  let harness: LedgerHarness;

  beforeAll(async () => {
    harness = await openLedgerHarness("rebuild");
    // Keys deleted, usage charged by a later append or not yet, token counts not reported: every path of
    // every fold, across many pages and chunks.
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

  const context = () => ({ pool: harness.ledger.pool, store: harness.store, projections: allProjections });

  it.each<RebuildFold>(["memory", "sql"])(
    "gives the live runner's rows, folding %s in many steps",
    async (fold) => {
      const live = await balanceChecksum(harness.ledger.pool);
      const progress: number[] = [];

      const rebuilt = await rebuildProjections(context(), {
        fold,
        batchSizeMax: 700,
        // Far fewer rows than the projections hold: every page after the first loads and merges.
        rowsInMemoryMax: 300,
        chunkEventsMax: 700,
        onProgress: (applied) => progress.push(applied),
      });

      expect(rebuilt.fold).toBe(fold);
      expect(rebuilt.checksum).toEqual(live);
      expect(rebuilt.eventCount).toBeGreaterThanOrEqual(12_000);
      expect(progress.length).toBeGreaterThan(10);
      expect(progress).toEqual([...progress].sort((left, right) => left - right));
      expect(progress[progress.length - 1]).toBe(rebuilt.eventCount);
      // Every row of every projection, compared with the TypeScript fold of the log.
      expect(await verifyProjections(context())).toEqual([]);
    },
    60_000,
  );

  it("rebuilds in SQL by default where the events are in PostgreSQL", async () => {
    const rebuilt = await rebuildProjections(context(), { batchSizeMax: 1_000 });
    expect(rebuilt.fold).toBe("sql");
  });

  it("given the whole log in one chunk, then it folds it once, with no merge to make the runner's rows", async () => {
    const live = await balanceChecksum(harness.ledger.pool);
    const progress: number[] = [];

    const rebuilt = await rebuildProjections(context(), {
      fold: "sql",
      batchSizeMax: 1_000,
      chunkEventsMax: 1_000_000,
      onProgress: (applied) => progress.push(applied),
    });

    expect(progress).toEqual([rebuilt.eventCount]);
    expect(rebuilt.checksum).toEqual(live);
    // The folds that merge several chunks' sums per key (usage by day, statement charges) among them.
    expect(await verifyProjections(context())).toEqual([]);
  }, 60_000);

  it("given the log in exactly two chunks, then the sums both chunks made for one key are merged into one row", async () => {
    const live = await balanceChecksum(harness.ledger.pool);
    const events = await harness.ledger.pool.query<{ count: string }>("SELECT count(*) FROM ledger_events");
    const progress: number[] = [];

    const rebuilt = await rebuildProjections(context(), {
      fold: "sql",
      batchSizeMax: 1_000,
      // Three quarters of the log per chunk: two chunks, within the estimate's error of the log's size.
      chunkEventsMax: Math.ceil(Number(events.rows[0]!.count) * 0.75),
      onProgress: (applied) => progress.push(applied),
    });

    expect(progress).toHaveLength(2);
    expect(progress[1]).toBe(rebuilt.eventCount);
    expect(rebuilt.checksum).toEqual(live);
    // Usage by day and statement charges: a day's, a month's charges of one key fall in both chunks.
    expect(await verifyProjections(context())).toEqual([]);
  }, 60_000);

  it("given appends while it rebuilds in SQL, then the runner folds those after the rebuild: none lost or doubled", async () => {
    let appending = true;
    let appended = 0;
    const appender = (async () => {
      while (appending || appended < 50) {
        await harness.append({
          streamId: "account-user-during",
          expectedVersion: "any",
          events: [topUp("during", "2.5", `during-${appended}`)],
        });
        appended++;
      }
    })();

    await rebuildProjections(context(), { fold: "sql", batchSizeMax: 1_000, chunkEventsMax: 500 });
    appending = false;
    await appender;
    // As a live runner does when it leads again: it resumes from the rebuilt checkpoints.
    const client = await harness.ledger.pool.connect();
    await harness.runner.prepare(client).finally(() => client.release());
    await harness.project();

    const balance = await harness.ledger.pool.query<{ topped_up_won: string }>(
      "SELECT topped_up_won FROM projection_balances WHERE account_kind = 'user' AND account_id = 'during'",
    );
    expect(balance.rows[0]?.topped_up_won).toBe(String(2.5 * appended));
    expect(await verifyProjections(context())).toEqual([]);
  }, 60_000);

  it("given its connection killed halfway, then the projections are as before and the next rebuild succeeds", async () => {
    const before = await balanceChecksum(harness.ledger.pool);
    let killing: Promise<unknown> | undefined;
    const killed = rebuildProjections(context(), {
      fold: "sql",
      batchSizeMax: 1_000,
      chunkEventsMax: 700,
      onProgress: () => {
        // The rebuild's backend is the one of this database inside a transaction; kill it after a chunk,
        // once: a second killing statement, itself in a transaction, would be the first one's victim.
        killing ??= harness.ledger.pool.query(
          `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
           WHERE datname = current_database() AND pid <> pg_backend_pid() AND xact_start IS NOT NULL`,
        );
      },
    });
    await expect(killed).rejects.toThrow();
    await killing;

    expect(await balanceChecksum(harness.ledger.pool)).toEqual(before);
    expect(await verifyProjections(context())).toEqual([]);
    const rebuilt = await rebuildProjections(context(), { fold: "sql", batchSizeMax: 1_000 });
    expect(rebuilt.checksum).toEqual(before);
  }, 60_000);

  it("refuses to fold in SQL a projection that has no SQL fold", async () => {
    const [first, ...others] = allProjections;
    const { sqlFold: _, ...withoutSqlFold } = first!;
    await expect(
      rebuildProjections(
        { ...context(), projections: [withoutSqlFold, ...others] },
        { fold: "sql", batchSizeMax: 1_000 },
      ),
    ).rejects.toThrow("an SQL fold for every projection");
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
    expect(await verifyProjections(context())).toEqual([]);
  });
});

describe("chunks of a rebuild in SQL", () => {
  const last = { commit: 0n, prepare: 0n };

  it("cover the transactions' range once, in order, without overlap", () => {
    const chunks = [
      ...chunksOf({ afterOrder: 99n, upToOrder: 1_000n, last, estimatedEvents: 10_000 }, 3_000),
    ];
    expect(chunks).toHaveLength(4);
    expect(chunks[0]!.afterOrder).toBe(99n);
    expect(chunks.at(-1)!.upToOrder).toBe(1_000n);
    for (let index = 1; index < chunks.length; index++)
      expect(chunks[index]!.afterOrder).toBe(chunks[index - 1]!.upToOrder);
  });

  it("are one chunk when the events fit in one, and one transaction at the least", () => {
    expect([...chunksOf({ afterOrder: 6n, upToOrder: 7n, last, estimatedEvents: 50 }, 10)]).toEqual([
      { afterOrder: 6n, upToOrder: 7n },
    ]);
    expect([...chunksOf({ afterOrder: 0n, upToOrder: 900n, last, estimatedEvents: 800 }, 1_000)]).toEqual([
      { afterOrder: 0n, upToOrder: 900n },
    ]);
  });
});
