import { allProjections } from "../projections";
import { AdmissionCache } from "../src/gateway/generation/admission-cache";
import { admissionProjections, readAdmission } from "../src/gateway/generation/admission-read-model";
import { limits } from "../src/kernel/limits";
import { accountsTouchedBy } from "../src/ledger/events";
import { ProjectionRunner } from "../src/ledger/projection/projection-runner";
import { ProjectionWaiter } from "../src/ledger/projection/projection-waiter";
import type { StreamAppend } from "../src/ledger/store/event-store";
import { isAtOrAfter, type LogPosition, logStart } from "../src/ledger/store/log-position";
import { type Ledger, openLedger } from "../src/ledger/store/open-ledger";
import { createBenchDatabase } from "./bench-database";
import type { Figure } from "./measure";
import { type FixtureKey, keyIssued, keysOfAccounts, toppedUp } from "./support/admission-fixtures";

/**
 * Issue 26: what one projection batch costs each gateway's admission cache, in key rows read, with 1,000
 * keys cached (one per account, as the gateway benchmark spreads its load). The same load runs twice on
 * the live runner: with notifications that name nothing (before: each batch re-read every cached key) and
 * with the accounts each batch touched (after). The load is top-ups of random accounts from concurrent
 * appenders, batched by the runner as requests' events are. The cache's timer (the safety net for a lost
 * notification) is off meanwhile; afterwards it runs alone for a few seconds with no load, counting what it
 * reads, beside the timer it replaced (every cached key each second, whatever the load) in the first run.
 *
 * `npx tsx bench/admission-refresh-bench.ts` runs it alone; `BENCH_ONLY=admission npm run bench` in the table.
 */

const cachedKeys = 1_000;
const appenders = 32;
const appendsPerAppender = 100;
const timerAloneMs = 5_000;

interface Phase {
  batches: number;
  reads: number;
  keysRead: number;
  accountsTouched: number;
}

/** What the cache's timer read on its own, with nothing appended. */
interface TimerAlone {
  seconds: number;
  reads: number;
  keysRead: number;
}

export async function runAdmissionRefreshBenchmarks(): Promise<Figure[]> {
  const database = await createBenchDatabase();
  const ledger = await openLedger({ databaseUrl: database.url, applicationName: "bench-admission" });
  try {
    const keys = keysOfAccounts("bench", cachedKeys, 1);
    await appendAll(ledger, keys.map(keyIssued));
    await appendAll(
      ledger,
      keys.map((key) => toppedUp(key.owner, "1000", "first")),
    );
    const before = await measure(ledger, database.url, keys, "before");
    const { counts: after, timer } = await measure(ledger, database.url, keys, "after");
    console.error(
      `admission refresh bench: before ${JSON.stringify(before.counts)}, after ${JSON.stringify(after)}, timer alone ${JSON.stringify(timer)}`,
    );
    const perBatch = (phase: Phase, count: number) => count / phase.batches;
    const label = `${cachedKeys.toLocaleString("en")} cached keys, ${perBatch(after, after.accountsTouched).toFixed(1)} accounts per batch`;
    return [
      {
        name: `admission cache: key rows read per projection batch (${label})`,
        value: perBatch(after, after.keysRead),
        unit: "rows",
        baseline: perBatch(before.counts, before.counts.keysRead),
        baselineName: "every cached key at each notification",
      },
      {
        name: `admission cache timer, no load: key rows read per second (${cachedKeys.toLocaleString("en")} cached keys; ${(timer.reads / timer.seconds).toFixed(1)} reads/s)`,
        value: timer.keysRead / timer.seconds,
        unit: "rows/s",
        baseline: before.timer.keysRead / before.timer.seconds,
        baselineName: "the timer before: every cached key each interval",
      },
    ];
  } finally {
    await ledger.close();
    await database.drop();
  }
}

async function measure(
  ledger: Ledger,
  databaseUrl: string,
  keys: readonly FixtureKey[],
  phase: "before" | "after",
): Promise<{ counts: Phase; timer: TimerAlone }> {
  const counts: Phase = { batches: 0, reads: 0, keysRead: 0, accountsTouched: 0 };
  const timer: TimerAlone = { seconds: timerAloneMs / 1_000, reads: 0, keysRead: 0 };
  let timing = false;
  let counting = false;
  const runner = new ProjectionRunner({
    pool: ledger.pool,
    connectionString: databaseUrl,
    store: ledger.store,
    projections: allProjections,
    batchSizeMax: limits.projectionBatchSizeMax,
    lingerMs: limits.projectionLingerMs,
    standbyRetryMs: 100,
    onProgress: () => {
      if (counting) counts.batches += 1;
    },
    ...(phase === "after"
      ? {
          touchedBy: (events) => {
            const touched = accountsTouchedBy(events);
            if (counting) counts.accountsTouched += touched.size;
            return touched;
          },
        }
      : {}),
  });
  const stopping = new AbortController();
  const running = runner.run(stopping.signal);
  const waiter = new ProjectionWaiter(ledger.pool, databaseUrl, 100);
  const cache = new AdmissionCache({
    read: (keyHashes) => {
      if (counting) {
        counts.reads += 1;
        counts.keysRead += keyHashes.length;
      }
      if (timing) {
        timer.reads += 1;
        timer.keysRead += keyHashes.length;
      }
      return readAdmission(ledger.pool, keyHashes);
    },
    entriesMax: limits.admissionCacheEntriesMax,
    idleMs: limits.admissionCacheIdleMs,
    refreshIntervalMs: limits.admissionCacheRefreshIntervalMs,
    onRefreshError: (error) => console.error(error),
  });
  waiter.addLocalReadModel(cache);
  await waiter.start();
  try {
    const end = await ledger.store.readAll({ after: logStart, limit: 1_000_000 });
    await waiter.waitFor(end.at(-1)!.position, admissionProjections, 60_000);
    for (const key of keys) await cache.find(key.keyHash);
    counting = true;
    const last = await load(ledger, keys, phase);
    // Counted until the cache has caught up by notifications alone (a wait would read every key itself).
    for (let attempt = 0; attempt < 6_000 && !isAtOrAfter(cache.caughtUpTo, last); attempt += 1)
      await new Promise((resolve) => setTimeout(resolve, 10));
    counting = false;
    timing = true;
    // Before: the timer as it was, "anything may have changed" each interval. After: the cache's own.
    const oldTimer =
      phase === "before"
        ? setInterval(() => cache.checkpointsAdvanced(), limits.admissionCacheRefreshIntervalMs)
        : undefined;
    if (phase === "after") cache.start();
    await new Promise((resolve) => setTimeout(resolve, timerAloneMs));
    clearInterval(oldTimer);
    cache.stop();
    timing = false;
    return { counts, timer };
  } finally {
    stopping.abort();
    await running;
    await waiter.close();
  }
}

/** Top-ups of accounts picked by a fixed sequence, from concurrent appenders; the last position. */
async function load(ledger: Ledger, keys: readonly FixtureKey[], phase: string): Promise<LogPosition> {
  let last = logStart;
  await Promise.all(
    Array.from({ length: appenders }, async (_, appender) => {
      let seed = appender + 1;
      for (let append = 0; append < appendsPerAppender; append += 1) {
        seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
        const owner = keys[seed % keys.length]!.owner;
        const appended = await ledger.store.append(toppedUp(owner, "1", `${phase}-${appender}-${append}`));
        if (isAtOrAfter(appended.position, last)) last = appended.position;
      }
    }),
  );
  return last;
}

async function appendAll(ledger: Ledger, appends: readonly StreamAppend[]): Promise<void> {
  for (let start = 0; start < appends.length; start += limits.holdBatchSizeMax) {
    const outcomes = await ledger.store.appendBatch(appends.slice(start, start + limits.holdBatchSizeMax));
    for (const outcome of outcomes) if (outcome.status === "rejected") throw outcome.reason;
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  runAdmissionRefreshBenchmarks()
    .then((figures) => console.table(figures))
    .catch((error: unknown) => {
      console.error(error);
      process.exit(1);
    });
}
