import { allProjections } from "../../projections";
import type { EventStore, StreamAppend } from "../../src/ledger/event-store";
import { type Ledger, openLedger } from "../../src/ledger/open-ledger";
import { ProjectionRunner } from "../../src/ledger/projection-runner";
import { createTestDatabase, type TestDatabase } from "./database";

/** A migrated ledger in its own database, with a projection runner driven explicitly by the test. */
export interface LedgerHarness {
  database: TestDatabase;
  ledger: Ledger;
  store: EventStore;
  runner: ProjectionRunner;
  /** Applies everything appended so far to every projection. */
  project(): Promise<void>;
  append(...appends: StreamAppend[]): Promise<void>;
  dispose(): Promise<void>;
}

export async function openLedgerHarness(label: string): Promise<LedgerHarness> {
  const database = await createTestDatabase(label);
  const ledger = await openLedger({ databaseUrl: database.url, applicationName: `test-${label}` });
  const runner = new ProjectionRunner({
    pool: ledger.pool,
    connectionString: database.url,
    store: ledger.store,
    projections: allProjections,
    batchSizeMax: 1_000,
    standbyRetryMs: 100,
  });
  const client = await ledger.pool.connect();
  await runner.prepare(client);
  return {
    database,
    ledger,
    store: ledger.store,
    runner,
    project: async () => {
      await runner.catchUp(client);
    },
    append: async (...appends) => {
      for (const append of appends) await ledger.store.append(append);
    },
    dispose: async () => {
      client.release();
      await ledger.close();
      await database.drop();
    },
  };
}
