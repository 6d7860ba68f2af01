import { appendSyntheticLedger, type SyntheticLedgerOptions } from "../../bench/support/synthetic-ledger";
import { allProjections } from "../../projections";
import { accountsTouchedBy, accountsWithKeysChangedBy } from "../../src/ledger/events";
import { ProjectionRunner } from "../../src/ledger/projection/projection-runner";
import type { EventStore, StreamAppend } from "../../src/ledger/store/event-store";
import { isAtOrAfter, type LogPosition } from "../../src/ledger/store/log-position";
import { type Ledger, openLedger } from "../../src/ledger/store/open-ledger";
import { createTestDatabase, type TestDatabase } from "./database";
import { topUp } from "./ledger-fixtures";

/** A migrated ledger in its own database, with a projection runner driven explicitly by the test. */
export interface LedgerHarness {
  database: TestDatabase;
  ledger: Ledger;
  store: EventStore;
  runner: ProjectionRunner;
  /** Applies everything appended through this harness so far to every projection. */
  project(): Promise<void>;
  /** Waits until every event committed so far, by any path, is visible to log readers. */
  visible(): Promise<void>;
  append(...appends: StreamAppend[]): Promise<void>;
  dispose(): Promise<void>;
}

export async function openLedgerHarness(label: string): Promise<LedgerHarness> {
  const database = await createTestDatabase(label, { migrated: true });
  const ledger = await openLedger({ databaseUrl: database.url, applicationName: `test-${label}` });
  const runner = new ProjectionRunner({
    pool: ledger.pool,
    connectionString: database.url,
    store: ledger.store,
    projections: allProjections,
    batchSizeMax: 1_000,
    standbyRetryMs: 100,
    touchedBy: accountsTouchedBy,
    keysChangedBy: accountsWithKeysChangedBy,
  });
  const client = await ledger.pool.connect();
  await runner.prepare(client);
  let lastAppended: LogPosition | undefined;
  // Readers see an event only once every older transaction of the whole server has ended, and test files
  // share a server: wait for visibility instead of assuming it. What is waited for is every event committed
  // so far, by any path (the store, a SQL function, the settled holds' log writer), not only this harness's.
  const visible = async () => {
    const committed = await ledger.pool.query<{ commit: string; prepare: string }>(
      `SELECT transaction_order::text AS commit, position::text AS prepare FROM ledger_events
       ORDER BY transaction_order DESC, position DESC LIMIT 1`,
    );
    const last = committed.rows[0];
    const target = last ? { commit: BigInt(last.commit), prepare: BigInt(last.prepare) } : lastAppended;
    if (!target) return;
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      if (isAtOrAfter(runner.lowestCheckpoint(), target)) return;
      const tail = await ledger.store.readAll({ after: runner.lowestCheckpoint(), limit: 100_000 });
      if (tail.length > 0 && isAtOrAfter(tail[tail.length - 1]!.position, target)) return;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    throw new Error(`the log's readers did not see its last event within 30 s`);
  };
  return {
    database,
    ledger,
    store: ledger.store,
    runner,
    visible,
    project: async () => {
      for (let attempt = 0; attempt < 3_000; attempt++) {
        await runner.catchUp(client);
        if (!lastAppended || isAtOrAfter(runner.lowestCheckpoint(), lastAppended)) return;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      throw new Error("projections did not reach the last appended event");
    },
    append: async (...appends) => {
      for (const append of appends) lastAppended = (await ledger.store.append(append)).position;
    },
    dispose: async () => {
      client.release();
      await ledger.close();
      await database.drop();
    },
  };
}

/**
 * Appends the synthetic ledger straight to the store, then one top-up through the harness so that
 * `project()` waits for everything before it, and projects it all. Returns the synthetic events appended.
 */
export async function projectSyntheticLedger(
  harness: LedgerHarness,
  options: SyntheticLedgerOptions,
): Promise<number> {
  const appended = await appendSyntheticLedger(harness.store, options);
  await harness.append({
    streamId: "account-user-synthetic-last",
    expectedVersion: "no-stream",
    events: [topUp("synthetic-last", "1", "end")],
  });
  await harness.project();
  return appended;
}
