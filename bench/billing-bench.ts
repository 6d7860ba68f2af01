import { randomUUID } from "node:crypto";
import pino from "pino";
import { allProjections } from "../projections";
import { seedBilling } from "../src/billing/commands/seed-billing";
import { createFxRateRefresher } from "../src/billing/fx/fx-rate-refresh";
import { createChargeQueue } from "../src/billing/queue/charge-queue";
import type { QueueBackend } from "../src/billing/queue/queue-backend";
import { removeQueueData } from "../src/billing/queue/remove-queue-data";
import { billingLimits, limits } from "../src/kernel/limits";
import type { LedgerEvent } from "../src/ledger/events";
import { ProjectionRunner } from "../src/ledger/projection/projection-runner";
import { ProjectionWaiter } from "../src/ledger/projection/projection-waiter";
import type { StreamAppend } from "../src/ledger/store/event-store";
import { type Ledger, openLedger } from "../src/ledger/store/open-ledger";
import { startBillingWorkers } from "../workers/billing-workers";
import { createBenchDatabase } from "./bench-database";
import { type Figure, timed } from "./measure";

/**
 * Reconciler benchmark (C9): charges per second from a backlog of recorded usage, through the queue and
 * the workers, on Redis and on the PostgreSQL backend — beside the store appending the same number of
 * charge-sized events directly (no queue, no pricing), measured in the same run.
 */

const usageCount = 5_000;
const drainTimeoutMs = 300_000;

function usageAppend(requestId: string): StreamAppend {
  const event: LedgerEvent = {
    type: "UsageRecorded",
    data: {
      requestId,
      keyId: randomUUID(),
      account: { kind: "user", id: `bench-${requestId.slice(-2)}` },
      userId: "bench",
      organizationId: null,
      model: "gamma-4-5",
      endpoint: "chat.completions",
      streamed: false,
      outcome: "completed",
      tokens: { input: 1200, cached: 200, output: 350, reasoning: 0 },
      usageSource: "upstream",
      startedAt: new Date().toISOString(),
    },
    metadata: { actor: "bench", correlationId: requestId, occurredAt: new Date().toISOString() },
  };
  return {
    streamId: `usage-${requestId}`,
    expectedVersion: "no-stream",
    events: [{ eventId: randomUUID(), event }],
  };
}

async function reconcileBacklog(backendKind: "redis" | "postgresql", redisUrl: string | undefined) {
  const database = await createBenchDatabase();
  const ledger = await openLedger({ databaseUrl: database.url, applicationName: "bench-billing" });
  const logger = pino({ level: "warn" });
  const stop = new AbortController();
  const runner = new ProjectionRunner({
    pool: ledger.pool,
    connectionString: database.url,
    store: ledger.store,
    projections: allProjections,
    batchSizeMax: limits.projectionBatchSizeMax,
    standbyRetryMs: 500,
  });
  const projections = runner.run(stop.signal);
  const waiter = new ProjectionWaiter(ledger.pool, database.url, 20);
  await waiter.start();
  const backend: QueueBackend =
    backendKind === "redis"
      ? { kind: "redis", redisUrl: redisUrl!, prefix: `bench-${randomUUID()}` }
      : { kind: "postgresql", databaseUrl: database.url };
  const clock = () => new Date();
  const refresher = createFxRateRefresher({
    store: ledger.store,
    clock,
    logger,
    authkey: undefined,
    url: "http://127.0.0.1:9",
  });
  try {
    await seedBilling({
      store: ledger.store,
      database: ledger.pool,
      waiter,
      clock,
      logger,
      defaultFxRateKrwPerUsd: "1400",
    });
    const requestIds = await appendUsageBacklog(ledger);
    const queue = createChargeQueue({ backend, logger, role: "background" });
    await queue.enqueueCharges(requestIds);
    const workers = await startBillingWorkers({
      backend,
      store: ledger.store,
      database: ledger.pool,
      databaseUrl: database.url,
      waiter,
      refresher,
      clock,
      logger,
    });
    const drained = await timed(() => waitUntilCharged(ledger, usageCount));
    await workers.close();
    await queue.close();
    const baseline = await timed(() => appendDirectly(ledger));
    return {
      chargesPerSecond: usageCount / drained.seconds,
      baselinePerSecond: usageCount / baseline.seconds,
    };
  } finally {
    stop.abort();
    await projections;
    await waiter.close();
    await refresher.close();
    await ledger.close();
    await database.drop();
    await removeQueueData(backend);
  }
}

/** The backlog: `usageCount` usages recorded and not charged, appended 500 per batch; answers their ids. */
async function appendUsageBacklog(ledger: Ledger): Promise<string[]> {
  const requestIds = Array.from(
    { length: usageCount },
    (_, index) => `req_bench_${index.toString().padStart(6, "0")}`,
  );
  for (let start = 0; start < requestIds.length; start += 500) {
    await ledger.store.appendBatch(requestIds.slice(start, start + 500).map(usageAppend));
  }
  return requestIds;
}

async function waitUntilCharged(ledger: Ledger, count: number): Promise<void> {
  const deadline = Date.now() + drainTimeoutMs;
  while ((await chargedCount(ledger)) < count) {
    if (Date.now() > deadline) throw new Error("reconciler did not drain the backlog in time");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function chargedCount(ledger: Ledger): Promise<number> {
  const result = await ledger.pool.query<{ count: string }>(
    "SELECT count(*) FROM ledger_events WHERE type = 'UsageCharged'",
  );
  return Number(result.rows[0]!.count);
}

/** The baseline: the same number of events appended straight to the store, 500 per batch. */
async function appendDirectly(ledger: Ledger): Promise<void> {
  for (let start = 0; start < usageCount; start += 500) {
    await ledger.store.appendBatch(
      Array.from({ length: Math.min(500, usageCount - start) }, (_, index) =>
        usageAppend(`req_baseline_${start + index}`),
      ),
    );
  }
}

export async function runBillingBenchmarks(options: { redisUrl?: string }): Promise<Figure[]> {
  const figures: Figure[] = [];
  const backends: ("redis" | "postgresql")[] = options.redisUrl ? ["redis", "postgresql"] : ["postgresql"];
  for (const backend of backends) {
    const result = await reconcileBacklog(backend, options.redisUrl);
    figures.push({
      name: `charges reconciled/s, ${backend === "redis" ? "Redis" : "PostgreSQL"} queue, ${usageCount} backlog in jobs of ${billingLimits.chargeJobRequestsMax}`,
      value: result.chargesPerSecond,
      unit: "charges/s",
      baseline: result.baselinePerSecond,
      baselineName: "same events appended directly, 500 per batch",
      ...(backend === "redis" ? { target: "≥ 5,000 charges/s" } : {}),
    });
  }
  return figures;
}
