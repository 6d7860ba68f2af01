import type pg from "pg";
import pino from "pino";
import { HoldRowCompletion } from "../../src/billing/holds/hold-row-completion";
import { SettledHoldsLog } from "../../src/billing/holds/settled-holds-log";
import type { EventStore } from "../../src/ledger/store/event-store";
import { PostgresEventStore } from "../../src/ledger/store/postgres-event-store";

/**
 * The settled hold rows of a test's ledger written into the log now, as the service's log writer does
 * within its linger (src/billing/holds/settled-holds-log.ts); answers the request ids whose usage it logged
 * recorded (their charges, had a queue been there). Rows another writer holds (a running service's own) are
 * skipped by the batch, so it returns once no settled row is left, whoever logged them.
 */
export async function logSettledHolds(pool: pg.Pool, store: EventStore): Promise<string[]> {
  if (!(store instanceof PostgresEventStore)) throw new Error("hold rows need the PostgreSQL event store");
  const recorded: string[] = [];
  const log = new SettledHoldsLog({
    pool,
    log: store.appendsBeside,
    enqueueCharges: (requestIds) => void recorded.push(...requestIds),
    // The test's own rows, logged now; the service's vacuum has tests of its own (hold-rows-vacuum.test.ts).
    vacuum: { removed: () => {} },
    logger: pino({ level: "silent" }),
    batchSizeMax: 500,
    pollIntervalMs: 60_000,
    lingerMs: 0,
  });
  for (let attempt = 0; attempt < 500; attempt++) {
    while ((await log.writeBatch()) > 0) {}
    const left = await pool.query("SELECT 1 FROM request_holds WHERE settled_at IS NOT NULL LIMIT 1");
    if (left.rowCount === 0) return recorded;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error("settled hold rows are still waiting to be logged");
}

/** Completing hold rows on a test's ledger, as the service does. */
export function holdRowCompletionOf(pool: pg.Pool): HoldRowCompletion {
  return new HoldRowCompletion(pool, 100);
}
