import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { fxRateUpdatedEventId } from "../../src/billing/commands/deterministic-event-id";
import { createFxRateRefresher, type FxRateRefresher } from "../../src/billing/fx/fx-rate-refresh";
import { createKoreaeximClient, type KoreaeximClient } from "../../src/billing/fx/koreaexim-client";
import { KoreaeximError } from "../../src/billing/fx/koreaexim-errors";
import { openQueue, type QueueBackend } from "../../src/billing/queue/queue-backend";
import { fxRefreshJobSchedulerId } from "../../src/kernel/seoul-calendar";
import { fxRateRefreshesQueueName, startFxRateRefreshWorker } from "../../workers/refresh-fx-rate";
import { fxRateUpdated, runProjections, silentLogger } from "../billing/billing-ledger-fixtures";
import { type FakeKoreaeximServer, startFakeKoreaeximServer } from "../billing/fake-koreaexim-server";
import { type LedgerHarness, openLedgerHarness } from "../support/ledger-harness";
import { eventually, queueBackendCases, removeQueueData, startTestLeader } from "./queue-test-support";

/**
 * The FX refresh against a fake bank speaking the real protocol (C7): the daily 00:05 KST job scheduler,
 * the start-up refresh when today has no rate, one event per day however often it runs, and nothing
 * recorded when the bank fails — the day keeps the latest earlier rate.
 */

const authkey = "TestAuthkey0123456789SecretValue";
// Friday 2026-11-20, 09:00 in Seoul: the refresh asks for Thursday the 19th.
const fridayMorning = new Date("2026-11-20T00:00:00.000Z");

let harness: LedgerHarness;
let bank: FakeKoreaeximServer;
let client: KoreaeximClient;
let refresher: FxRateRefresher;
let sequence = 0;

beforeEach(async () => {
  harness = await openLedgerHarness(`fx_refresh_${sequence++}`);
  bank = await startFakeKoreaeximServer({ authkey });
  client = createKoreaeximClient({
    authkey,
    url: bank.url,
    // No test here makes the bank hang, and they count the requests: a timeout short enough to expire on
    // a loaded machine retried a date and failed one (the client's timeouts are koreaexim-client.test.ts's).
    limits: { requestTimeoutMs: 10_000, attemptsPerDateMax: 2 },
    sleep: async () => {},
  });
  refresher = createFxRateRefresher({
    store: harness.store,
    clock: () => fridayMorning,
    logger: silentLogger,
    authkey,
    url: bank.url,
    client,
  });
});

afterEach(async () => {
  await client.close();
  await bank.close();
  await harness.dispose();
});

async function ratesOf(appliesOn: string) {
  return (await harness.store.readStream(`fx-rate-${appliesOn}`)).filter(
    (event) => event.type === "FxRateUpdated",
  );
}

describe("FX refresh", () => {
  it("records the previous business day's rate for today, once however often it runs", async () => {
    // Given
    bank.script("20261119", { kind: "business-day", usdDealBaseRate: "1,483.40" });

    // When
    const first = await refresher.refresh({ actor: "system:fx-refresh" });
    const second = await refresher.refresh({ actor: "system:fx-refresh" });

    // Then
    expect(first).toMatchObject({
      kind: "recorded",
      quote: { rateDate: "2026-11-19", rateKrwPerUsd: "1483.4" },
    });
    expect(second).toEqual({ kind: "already-recorded", appliesOn: "2026-11-20" });
    const rates = await ratesOf("2026-11-20");
    expect(rates).toHaveLength(1);
    expect(rates[0]).toMatchObject({
      eventId: fxRateUpdatedEventId("2026-11-20", "koreaexim"),
      data: { appliesOn: "2026-11-20", rateDate: "2026-11-19", rateKrwPerUsd: "1483.4", source: "koreaexim" },
      metadata: { actor: "system:fx-refresh", occurredAt: fridayMorning.toISOString() },
    });
    expect(bank.requests()).toHaveLength(1);
  });

  it("walks back over the weekend on a Monday and records Friday as the rate date", async () => {
    // Given: Monday 2026-11-23; the bank publishes nothing for the weekend
    bank.script("20261120", { kind: "business-day", usdDealBaseRate: "1,470.10" });

    // When
    const outcome = await refresher.refresh({ actor: "admin" }, "2026-11-23");

    // Then
    expect(outcome).toMatchObject({
      kind: "recorded",
      quote: { appliesOn: "2026-11-23", rateDate: "2026-11-20" },
    });
    expect(bank.requests().map((request) => request.searchDate)).toEqual([
      "20261122",
      "20261121",
      "20261120",
    ]);
  });

  it("records nothing when the bank refuses, so the day keeps the latest earlier rate", async () => {
    // Given: yesterday's rate is in the ledger; today the bank answers result 4 (daily limit)
    await harness.append(
      fxRateUpdated(
        { appliesOn: "2026-11-19", rateDate: "2026-11-18", rateKrwPerUsd: "1470", source: "koreaexim" },
        "2026-11-18T15:05:00.000Z",
      ),
    );
    bank.script("20261119", { kind: "refusal", resultCode: 4 });

    // When / Then
    await expect(refresher.refresh({ actor: "system:fx-refresh" })).rejects.toBeInstanceOf(KoreaeximError);
    expect(await ratesOf("2026-11-20")).toHaveLength(0);
    expect(await ratesOf("2026-11-19")).toHaveLength(1);
  });

  it("does nothing without an authkey", async () => {
    // Given
    const unconfigured = createFxRateRefresher({
      store: harness.store,
      clock: () => fridayMorning,
      logger: silentLogger,
      authkey: undefined,
      url: bank.url,
    });

    // When
    const outcome = await unconfigured.refresh({ actor: "admin" });

    // Then
    expect(unconfigured.configured).toBe(false);
    expect(outcome).toEqual({ kind: "not-configured" });
    expect(bank.requests()).toHaveLength(0);
  });
});

describe.each(queueBackendCases)("FX refresh worker on the $name", (backendCase) => {
  let backend: QueueBackend;
  let projections: Awaited<ReturnType<typeof runProjections>>;

  beforeEach(async () => {
    backend = backendCase.backendFor(harness);
    projections = await runProjections(harness);
  });

  afterEach(async () => {
    await projections.stop();
    await removeQueueData(backend);
  });

  it("schedules the daily 00:05 Seoul refresh and refreshes at start-up when today has no rate", async () => {
    // Given
    bank.script("20261119", { kind: "business-day", usdDealBaseRate: "1,483.40" });

    // When
    const leader = startTestLeader(harness.database.url);
    const worker = await startFxRateRefreshWorker({
      backend,
      database: harness.ledger.pool,
      refresher,
      clock: () => fridayMorning,
      logger: silentLogger,
      leader,
    });
    try {
      // Then
      await eventually("today's rate is recorded", async () => (await ratesOf("2026-11-20")).length === 1);
      const queue = openQueue(fxRateRefreshesQueueName, backend, {
        role: "background",
        defaultJobOptions: {},
      });
      try {
        const scheduler = await queue.getJobScheduler(fxRefreshJobSchedulerId);
        expect(scheduler).toMatchObject({ pattern: "5 0 * * *", tz: "Asia/Seoul" });
      } finally {
        await queue.close();
      }
    } finally {
      await leader.close();
      await worker.close();
    }
  });

  // Redis only: the PostgreSQL backend keeps its queues with the ledger.
  it.runIf(backendCase.name === "Redis backend")(
    "has the daily schedule back soon after the queue store lost its data",
    async () => {
      // Given: a running FX worker whose leader checks the schedule every 200 ms
      const leader = startTestLeader(harness.database.url);
      const worker = await startFxRateRefreshWorker({
        backend,
        database: harness.ledger.pool,
        refresher,
        clock: () => fridayMorning,
        logger: silentLogger,
        leader,
        scheduleCheckIntervalMs: 200,
      });
      const queue = openQueue(fxRateRefreshesQueueName, backend, {
        role: "background",
        defaultJobOptions: {},
      });
      try {
        await eventually("the schedule exists", async () =>
          Boolean(await queue.getJobScheduler(fxRefreshJobSchedulerId)),
        );

        // When: every key of this deployment vanishes from Redis (as with FLUSHALL)
        await removeQueueData(backend);

        // Then
        await eventually(
          "the schedule is back",
          async () => Boolean(await queue.getJobScheduler(fxRefreshJobSchedulerId)),
          2_000,
        );
      } finally {
        await queue.close();
        await leader.close();
        await worker.close();
      }
    },
  );

  it("does not refresh at start-up when today already has a rate", async () => {
    // Given: the admin recorded today's rate
    await harness.append(
      fxRateUpdated(
        { appliesOn: "2026-11-20", rateDate: "2026-11-19", rateKrwPerUsd: "1490" },
        "2026-11-19T16:00:00.000Z",
      ),
    );
    await eventually("the rate is projected", async () => {
      const rows = await harness.ledger.pool.query("SELECT 1 FROM projection_fx_rates");
      return rows.rows.length === 1;
    });

    // When
    const leader = startTestLeader(harness.database.url);
    const worker = await startFxRateRefreshWorker({
      backend,
      database: harness.ledger.pool,
      refresher,
      clock: () => fridayMorning,
      logger: silentLogger,
      leader,
    });
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    await leader.close();
    await worker.close();

    // Then
    expect(bank.requests()).toHaveLength(0);
  });
});
