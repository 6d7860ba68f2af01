import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { describe, expect, it } from "vitest";
import { type ChargeUsageOutcome, chargeUsage, chargeUsages } from "../../src/billing/charging/charge-usage";
import { type ChargeQueue, createChargeQueue } from "../../src/billing/queue/charge-queue";
import type { QueueBackend } from "../../src/billing/queue/queue-backend";
import { createPricingReadModel } from "../../src/billing/read-models/pricing-read-model";
import { type RunningWorker, startReconcileUsageWorker } from "../../workers/reconcile-usage";
import { balanceOf, chargesOf, silentLogger, usageRecorded } from "../billing/billing-ledger-fixtures";
import { eventually, queueBackendCases, useChargeableLedger } from "./queue-test-support";

/**
 * Exactly once through BullMQ (C7): whatever the queue does — the same job delivered again, duplicates
 * enqueued by two producers and consumed by two workers, a worker killed after charging but before
 * acknowledging — each usage ends with one UsageCharged and its balance moves once.
 */

const account = { kind: "user", id: "carol" } as const;
const requestStart = "2026-11-20T03:00:00.000Z";
// 1000 input + 500 output tokens at 1 USD / 1M each, 1000 KRW/USD: ₩1.5 per request, from ₩100.

describe.each(queueBackendCases)("reconciler on the $name", (backendCase) => {
  const ledger = useChargeableLedger("reconcile", backendCase, account);

  const chargeDependencies = () => ({
    store: ledger.harness.store,
    waiter: ledger.projections.waiter,
    pricing: createPricingReadModel(ledger.harness.ledger.pool),
    clock: () => new Date("2026-11-20T03:00:05.000Z"),
    projectionWaitTimeoutMs: 10_000,
  });

  function chargeUsageHere(requestId: string): Promise<ChargeUsageOutcome> {
    return chargeUsage(chargeDependencies(), requestId);
  }

  /**
   * A worker whose every charge run is recorded, so the test knows how often a request was delivered; `jobs`
   * receives the request ids of every job it ran.
   */
  function startWorker(
    runs: ChargeUsageOutcome["kind"][],
    settings = {},
    jobs: string[][] = [],
  ): RunningWorker {
    const worker = startReconcileUsageWorker({
      backend: ledger.backend,
      logger: silentLogger,
      settings: { stalledCheckIntervalMs: 200, ...settings },
      chargeUsages: async (requestIds) => {
        jobs.push([...requestIds]);
        const outcomes = await chargeUsages(chargeDependencies(), requestIds);
        for (const outcome of outcomes.values()) {
          if (outcome.status === "fulfilled") runs.push(outcome.value.kind);
        }
        return outcomes;
      },
    });
    ledger.closers.push(() => worker.close());
    return worker;
  }

  function openChargeQueue(): ChargeQueue {
    const queue = createChargeQueue({ backend: ledger.backend, logger: silentLogger, role: "background" });
    ledger.closers.push(() => queue.close());
    return queue;
  }

  async function givenUsages(requestIds: readonly string[]): Promise<void> {
    await ledger.harness.append(
      ...requestIds.map((requestId) => usageRecorded({ requestId, account, startedAt: requestStart })),
    );
  }

  it("charges once when the same job is delivered five times", async () => {
    // Given
    await givenUsages(["req_five"]);
    const runs: ChargeUsageOutcome["kind"][] = [];
    startWorker(runs);
    const queue = openChargeQueue();

    // When: delivered, completed, delivered again — five times
    for (let delivery = 1; delivery <= 5; delivery += 1) {
      await queue.enqueueCharges(["req_five"]);
      await eventually(`delivery ${delivery} ran`, async () => runs.length === delivery);
    }

    // Then
    expect(runs).toEqual([
      "charged",
      "already-charged",
      "already-charged",
      "already-charged",
      "already-charged",
    ]);
    expect(await chargesOf(ledger.harness, "req_five")).toHaveLength(1);
    await eventually("the balance moved", async () => (await balanceOf(ledger.harness, account)) === "98.5");
  });

  it("charges each usage once when two producers enqueue it and two workers consume it", async () => {
    // Given
    const requestIds = Array.from({ length: 40 }, (_, index) => `req_race_${index}`);
    await givenUsages(requestIds);
    const runs: ChargeUsageOutcome["kind"][] = [];
    startWorker(runs, { concurrency: 8 });
    startWorker(runs, { concurrency: 8 });
    const gatewayQueue = openChargeQueue();
    const sweeperQueue = openChargeQueue();

    // When: both producers enqueue everything at once, and each worker charges directly as well
    await Promise.all([
      gatewayQueue.enqueueCharges(requestIds),
      sweeperQueue.enqueueCharges(requestIds),
      ...requestIds.map((requestId) => chargeUsageHere(requestId)),
    ]);
    await eventually("every usage is charged", async () => {
      const counts = await Promise.all(
        requestIds.map(async (requestId) => (await chargesOf(ledger.harness, requestId)).length),
      );
      return counts.every((count) => count >= 1);
    });
    await eventually("the queue is drained", async () => runs.length >= requestIds.length);

    // Then
    for (const requestId of requestIds) expect(await chargesOf(ledger.harness, requestId)).toHaveLength(1);
    // 100 − 40 × 1.5
    await eventually(
      "the balance moved once per usage",
      async () => (await balanceOf(ledger.harness, account)) === "40",
    );
  });

  it("charges the good usages of a job, drops one that was never recorded, and does not retry the job", async () => {
    // Given
    await givenUsages(["req_good_1", "req_good_2"]);
    const runs: ChargeUsageOutcome["kind"][] = [];
    const jobs: string[][] = [];
    startWorker(runs, {}, jobs);

    // When
    await openChargeQueue().enqueueCharges(["req_good_1", "req_never_recorded", "req_good_2"]);
    await eventually("the job ran", async () => runs.length === 2);
    // Past the first retry's backoff (1 s): a retried job would have run again by now.
    await new Promise((resolve) => setTimeout(resolve, 1_500));

    // Then
    expect(jobs).toEqual([["req_good_1", "req_never_recorded", "req_good_2"]]);
    expect(runs).toEqual(["charged", "charged"]);
    expect(await chargesOf(ledger.harness, "req_good_1")).toHaveLength(1);
    expect(await chargesOf(ledger.harness, "req_good_2")).toHaveLength(1);
    await eventually(
      "the balance moved twice",
      async () => (await balanceOf(ledger.harness, account)) === "97",
    );
  });

  it("charges what it can and retries a job with only the usage that could not be priced", async () => {
    // Given: one usage of a model that has no price anywhere (an operator must set one)
    await ledger.harness.append(
      usageRecorded({ requestId: "req_priced", account, startedAt: requestStart }),
      usageRecorded({ requestId: "req_unpriced", account, startedAt: requestStart, model: "no-such-model" }),
    );
    const jobs: string[][] = [];
    startWorker([], {}, jobs);

    // When
    await openChargeQueue().enqueueCharges(["req_priced", "req_unpriced"]);

    // Then: the retry carries only the failed usage
    await eventually("the job was retried", async () => jobs.length >= 2, 10_000);
    expect(jobs[0]).toEqual(["req_priced", "req_unpriced"]);
    expect(jobs[1]).toEqual(["req_unpriced"]);
    expect(await chargesOf(ledger.harness, "req_priced")).toHaveLength(1);
    expect(await chargesOf(ledger.harness, "req_unpriced")).toHaveLength(0);
  });

  it("gathers a burst of usages from the request path into a few jobs, each usage charged once", async () => {
    // Given
    const requestIds = Array.from({ length: 60 }, (_, index) => `req_burst_${index}`);
    await givenUsages(requestIds);
    const jobs: string[][] = [];
    startWorker([], {}, jobs);
    const gatewayQueue = createChargeQueue({ backend: ledger.backend, logger: silentLogger });
    ledger.closers.push(() => gatewayQueue.close());

    // When: the gateway hands them over one by one, as requests finish
    for (const requestId of requestIds) gatewayQueue.enqueueCharge(requestId);

    // Then
    await eventually(
      "every usage is charged",
      async () => (await balanceOf(ledger.harness, account)) === "10",
    );
    expect(jobs.reduce((sum, job) => sum + job.length, 0)).toBe(requestIds.length);
    expect(jobs.length).toBeLessThanOrEqual(3);
    for (const requestId of requestIds) expect(await chargesOf(ledger.harness, requestId)).toHaveLength(1);
  });

  it("charges once when a worker is killed after charging and its stalled job is redelivered", async () => {
    // Given: a worker in another process that charges, then hangs before acknowledging
    await givenUsages(["req_killed"]);
    const doomed = startDoomedWorker(ledger.harness.database.url, ledger.backend);
    ledger.closers.push(async () => {
      doomed.process.kill("SIGKILL");
    });
    await doomed.line((line) => line === "ready");
    const queue = openChargeQueue();
    await queue.enqueueCharges(["req_killed"]);
    await doomed.line((line) => line.startsWith("charged req_killed"));

    // When: the process dies mid-job; another worker takes over once the lock expires
    doomed.process.kill("SIGKILL");
    const runs: ChargeUsageOutcome["kind"][] = [];
    startWorker(runs);
    await eventually("the stalled job is redelivered", async () => runs.length >= 1, 30_000);

    // Then
    expect(runs[0]).toBe("already-charged");
    expect(await chargesOf(ledger.harness, "req_killed")).toHaveLength(1);
    await eventually(
      "the balance moved once",
      async () => (await balanceOf(ledger.harness, account)) === "98.5",
    );
  });
});

function startDoomedWorker(databaseUrl: string, backend: QueueBackend) {
  const child: ChildProcess = spawn(
    process.execPath,
    ["--import", "tsx", new URL("./charge-worker-process.ts", import.meta.url).pathname],
    {
      env: {
        ...process.env,
        DATABASE_URL: databaseUrl,
        QUEUE_BACKEND: JSON.stringify(backend),
        LOCK_DURATION_MS: "1000",
      },
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  const lines: string[] = [];
  const waiting = new Set<() => void>();
  createInterface({ input: child.stdout! }).on("line", (line) => {
    lines.push(line);
    for (const wake of waiting) wake();
  });
  return {
    process: child,
    line: (matches: (line: string) => boolean) =>
      new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error("the worker process did not say it")), 20_000);
        const check = () => {
          if (!lines.some(matches)) return;
          clearTimeout(timer);
          waiting.delete(check);
          resolve();
        };
        waiting.add(check);
        check();
      }),
  };
}
