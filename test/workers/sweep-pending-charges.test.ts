import { describe, expect, it } from "vitest";
import { chargeUsages } from "../../src/billing/charging/charge-usage";
import { createFxRateRefresher } from "../../src/billing/fx/fx-rate-refresh";
import { createChargeQueue } from "../../src/billing/queue/charge-queue";
import type { QueueBackend } from "../../src/billing/queue/queue-backend";
import { createPricingReadModel } from "../../src/billing/read-models/pricing-read-model";
import { startBillingWorkers } from "../../workers/billing-workers";
import { startReconcileUsageWorker } from "../../workers/reconcile-usage";
import { createPendingChargeSweep, schedulePendingChargeSweep } from "../../workers/sweep-pending-charges";
import {
  balanceOf,
  chargesOf,
  runProjections,
  silentLogger,
  usageRecorded,
} from "../billing/billing-ledger-fixtures";
import { openLedgerHarness } from "../support/ledger-harness";
import { eventually, queueBackendCases, startTestLeader, useChargeableLedger } from "./queue-test-support";

/**
 * Enqueueing never blocks a request, and nothing is lost when it fails (C7, issue 5): with the queue
 * unreachable the gateway's enqueue returns at once and throws nothing; the usage stays pending in the
 * ledger, and the sweeper, on a working queue, has every usage charged — once.
 */

const account = { kind: "organization", id: "initech" } as const;
const requestStart = "2026-11-20T03:00:00.000Z";
// The sweeper's clock: ten minutes after the usage, well past the pending age.
const sweepClock = () => new Date("2026-11-20T03:10:00.000Z");
const unreachableRedis: QueueBackend = {
  kind: "redis",
  redisUrl: "redis://127.0.0.1:6390",
  prefix: "unreachable",
};

describe.each(queueBackendCases)("sweeper on the $name", (backendCase) => {
  const ledger = useChargeableLedger("sweep", backendCase, account);

  async function pendingCount(): Promise<number> {
    const pending = await ledger.harness.ledger.pool.query("SELECT 1 FROM projection_pending_charges");
    return pending.rows.length;
  }

  it("charges every usage whose enqueue was lost while the queue was unreachable, once", async () => {
    // Given: the gateway's queue points at a Redis nobody listens on
    const requestIds = Array.from({ length: 30 }, (_, index) => `req_lost_${index}`);
    const gatewayQueue = createChargeQueue({
      backend: unreachableRedis,
      logger: silentLogger,
      limits: { chargeEnqueueTimeoutMs: 200, chargeEnqueuesWaitingMax: 10 },
    });
    ledger.closers.push(() => gatewayQueue.close());

    // When: the usages are recorded and handed to the dead queue
    const startedAtMs = performance.now();
    for (const requestId of requestIds) {
      await ledger.harness.append(usageRecorded({ requestId, account, startedAt: requestStart }));
      gatewayQueue.enqueueCharge(requestId);
    }
    const enqueueingMs = performance.now() - startedAtMs;
    await new Promise((resolve) => setTimeout(resolve, 500));

    // Then: nothing waited for the queue, and nothing is charged yet — every usage is pending
    expect(enqueueingMs).toBeLessThan(2_000);
    for (const requestId of requestIds) expect(await chargesOf(ledger.harness, requestId)).toHaveLength(0);
    await eventually("every usage is pending", async () => (await pendingCount()) === requestIds.length);

    // When: the sweeper and a reconciler run on a working queue
    const workingQueue = createChargeQueue({
      backend: ledger.backend,
      logger: silentLogger,
      role: "background",
    });
    ledger.closers.push(() => workingQueue.close());
    const reconciler = startReconcileUsageWorker({
      backend: ledger.backend,
      logger: silentLogger,
      chargeUsages: (requestIds) =>
        chargeUsages(
          {
            store: ledger.harness.store,
            waiter: ledger.projections.waiter,
            pricing: createPricingReadModel(ledger.harness.ledger.pool),
            clock: sweepClock,
            projectionWaitTimeoutMs: 10_000,
          },
          requestIds,
        ),
    });
    ledger.closers.push(() => reconciler.close());
    const leader = startTestLeader(ledger.harness.database.url);
    schedulePendingChargeSweep(leader, {
      database: ledger.harness.ledger.pool,
      queue: workingQueue,
      clock: sweepClock,
      logger: silentLogger,
      settings: { intervalMs: 300 },
    });
    ledger.closers.push(() => leader.close());

    // Then: each usage charged once, the balance moved by the exact sum (30 × ₩1.5)
    await eventually("every usage is charged", async () => (await pendingCount()) === 0);
    for (const requestId of requestIds) expect(await chargesOf(ledger.harness, requestId)).toHaveLength(1);
    expect(await balanceOf(ledger.harness, account)).toBe("55");
  });

  it("enqueues usage older than the pending age and leaves younger usage to its own job", async () => {
    // Given: one usage recorded 10 minutes before the sweep, one 2 seconds before (the pending age is 5 s)
    await ledger.harness.append(
      usageRecorded({ requestId: "req_old", account, startedAt: requestStart }),
      usageRecorded({
        requestId: "req_young",
        account,
        startedAt: requestStart,
        recordedAt: "2026-11-20T03:09:58.000Z",
      }),
    );
    await eventually("both usages are pending", async () => (await pendingCount()) === 2);
    const enqueued: string[] = [];

    // When
    let sweeps = 0;
    const leader = startTestLeader(ledger.harness.database.url);
    schedulePendingChargeSweep(leader, {
      database: ledger.harness.ledger.pool,
      queue: {
        enqueueCharges: async (ids) => {
          sweeps += 1;
          enqueued.push(...ids);
          return [];
        },
        queuedJobIds: async () => new Set(),
      },
      clock: sweepClock,
      logger: silentLogger,
      settings: { intervalMs: 200 },
    });
    ledger.closers.push(() => leader.close());
    await eventually("two sweeps ran", async () => sweeps >= 2);

    // Then
    expect(new Set(enqueued)).toEqual(new Set(["req_old"]));
  });
});

describe("sweeper and the jobs it enqueued", () => {
  const ledger = useChargeableLedger("sweep_dedupe", queueBackendCases[0]!, account);

  it("does not enqueue a usage again while its job is queued, and does once the job is gone", async () => {
    // Given: an old pending usage, and a queue whose jobs stay queued until the test says otherwise
    await ledger.harness.append(usageRecorded({ requestId: "req_stuck", account, startedAt: requestStart }));
    await eventually("the usage is pending", async () => {
      const pending = await ledger.harness.ledger.pool.query("SELECT 1 FROM projection_pending_charges");
      return pending.rows.length === 1;
    });
    const enqueued: string[][] = [];
    const queued = new Set<string>();
    const sweep = createPendingChargeSweep({
      database: ledger.harness.ledger.pool,
      queue: {
        enqueueCharges: async (ids) => {
          enqueued.push([...ids]);
          const jobId = `job-${enqueued.length}`;
          queued.add(jobId);
          return [{ jobId, requestIds: ids }];
        },
        queuedJobIds: async (jobIds) => new Set(jobIds.filter((jobId) => queued.has(jobId))),
      },
      clock: sweepClock,
      logger: silentLogger,
    });

    // When: three sweeps; the queue loses the job (e.g. Redis flushed) between the second and third
    const first = await sweep();
    const second = await sweep();
    queued.clear();
    const third = await sweep();

    // Then
    expect([first, second, third]).toEqual([1, 0, 1]);
    expect(enqueued.filter((ids) => ids.length > 0)).toEqual([["req_stuck"], ["req_stuck"]]);
  });
});

describe("charge queue with Redis unreachable", () => {
  it("returns at once, throws nothing, and closes promptly", async () => {
    // Given
    const queue = createChargeQueue({
      backend: unreachableRedis,
      logger: silentLogger,
      limits: { chargeEnqueueTimeoutMs: 100, chargeEnqueuesWaitingMax: 5 },
    });

    // When
    const startedAtMs = performance.now();
    for (let index = 0; index < 1_000; index += 1) queue.enqueueCharge(`req_dead_${index}`);
    const enqueueingMs = performance.now() - startedAtMs;
    await new Promise((resolve) => setTimeout(resolve, 300));
    const closingStartedAtMs = performance.now();
    await queue.close();

    // Then
    expect(enqueueingMs).toBeLessThan(200);
    expect(performance.now() - closingStartedAtMs).toBeLessThan(6_000);
  });
});

describe("billing workers with Redis unreachable at start-up", () => {
  it("start and close without waiting for Redis, so the process can still serve", async () => {
    // Given
    const harness = await openLedgerHarness("workers_unreachable");
    const projections = await runProjections(harness);
    try {
      // When
      const startingAtMs = performance.now();
      const workers = await startBillingWorkers({
        backend: unreachableRedis,
        store: harness.store,
        database: harness.ledger.pool,
        databaseUrl: harness.database.url,
        waiter: projections.waiter,
        refresher: createFxRateRefresher({
          store: harness.store,
          clock: sweepClock,
          logger: silentLogger,
          authkey: undefined,
          url: "http://127.0.0.1:9",
        }),
        clock: sweepClock,
        logger: silentLogger,
      });
      const startingMs = performance.now() - startingAtMs;
      const closingAtMs = performance.now();
      await workers.close();

      // Then
      expect(startingMs).toBeLessThan(2_000);
      expect(performance.now() - closingAtMs).toBeLessThan(8_000);
    } finally {
      await projections.stop();
      await harness.dispose();
    }
  }, 20_000);
});
