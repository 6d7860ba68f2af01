import { randomUUID } from "node:crypto";
import pg from "pg";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { defaultFxRateStreamId } from "../src/billing/commands/seed-billing";
import { loadConfig } from "../src/config";
import { type Billing, startBilling } from "../src/start-billing";
import { chargesOf, runProjections, silentLogger, usageRecorded } from "./billing/billing-ledger-fixtures";
import { type LedgerHarness, openLedgerHarness } from "./support/ledger-harness";
import { eventually, removeQueueData } from "./workers/queue-test-support";

/**
 * The composition root's view of billing: `startBilling`, then `attach` to the running ledger — seeds the
 * catalog prices and the default rate, starts the workers — and a usage handed to `charges` gets charged.
 * This one test runs on the real clock: the default rate is seeded for "today".
 */

const secrets = {
  SESSION_SECRET: "test-session-secret-0123456789abcdef0123456789",
  KEY_PEPPER: "test-key-pepper-0123456789abcdef0123456789abcd",
};

describe.each([
  { name: "PostgreSQL backend", redisUrl: undefined },
  ...(process.env.REDIS_URL === undefined
    ? []
    : [{ name: "Redis backend", redisUrl: process.env.REDIS_URL }]),
])("startBilling on the $name", ({ redisUrl }) => {
  let harness: LedgerHarness;
  let projections: Awaited<ReturnType<typeof runProjections>>;
  let billing: Billing;
  const queuePrefix = `test-${randomUUID()}`;

  beforeEach(async () => {
    harness = await openLedgerHarness("start_billing");
    projections = await runProjections(harness);
    billing = await startBillingWith();
  });

  function startBillingWith(limits?: { firstStartSeedWaitMs: number }) {
    return startBilling({
      config: loadConfig({
        DATABASE_URL: harness.database.url,
        ...(redisUrl === undefined ? {} : { REDIS_URL: redisUrl }),
        ...secrets,
        FX_USDKRW_DEFAULT: "1350.5",
      }),
      databaseUrl: harness.database.url,
      logger: silentLogger,
      runWorkers: true,
      queuePrefix,
      ...(limits === undefined ? {} : { limits }),
    });
  }

  afterEach(async () => {
    await billing.close();
    await projections.stop();
    if (redisUrl !== undefined) await removeQueueData({ kind: "redis", redisUrl, prefix: queuePrefix });
    await harness.dispose();
  });

  it("seeds on attach and charges a usage handed to the enqueuer", async () => {
    // Given
    await billing.attach({ ledger: harness.ledger, waiter: projections.waiter });
    // A request is priced at rates recorded before it started; under a long transaction elsewhere on the
    // server the default rate may be recorded after the start returns.
    await eventually("the default rate is recorded", async () => (await defaultRatesRecorded()) === 1);

    // When
    const charge = await chargeOfUsageStartedNow("req_composed", "frank");

    // Then: the catalog's 0.25 USD per 1M input tokens at the default ₩1350.5 per USD
    expect(charge).toMatchObject({ amountWon: "337.625000" });
  });

  it("given a write transaction open on the server through the start, when it ends, then the default rate is recorded and a usage charged without a restart", async () => {
    // Given: every projection waits for a transaction older than the seeds (docs/ledger.md)
    await billing.close();
    billing = await startBillingWith({ firstStartSeedWaitMs: 200 });
    const openTransaction = new pg.Client({ connectionString: harness.database.url });
    await openTransaction.connect();
    try {
      await openTransaction.query("BEGIN");
      await openTransaction.query("SELECT pg_current_xact_id()");
      await billing.attach({ ledger: harness.ledger, waiter: projections.waiter });
      expect(await defaultRatesRecorded()).toBe(0);
    } finally {
      // When
      await openTransaction.query("COMMIT");
      await openTransaction.end();
    }

    // Then: the rate is recorded, and a request started after it is charged at it
    await eventually("the default rate is recorded", async () => (await defaultRatesRecorded()) === 1);
    expect(await chargeOfUsageStartedNow("req_after_wait", "grace")).toMatchObject({
      amountWon: "337.625000",
    });
    expect(await defaultRatesRecorded()).toBe(1);
  });

  /** Records a usage of 1M input tokens of alpha-5.4-mini started now, hands it over, and awaits its charge. */
  async function chargeOfUsageStartedNow(requestId: string, userId: string): Promise<unknown> {
    await harness.append(
      usageRecorded({
        requestId,
        account: { kind: "user", id: userId },
        model: "alpha-5.4-mini",
        tokens: { input: 1_000_000, cached: 0, output: 0, reasoning: 0 },
        startedAt: new Date().toISOString(),
      }),
    );
    billing.charges.enqueueCharge(requestId);
    await eventually("the usage is charged", async () => (await chargesOf(harness, requestId)).length === 1);
    const [charge] = await chargesOf(harness, requestId);
    return charge!.data;
  }

  /** Straight from the table: readers of the log wait for the open transaction too. */
  async function defaultRatesRecorded(): Promise<number> {
    const result = await harness.ledger.pool.query(
      "SELECT 1 FROM ledger_events WHERE type = 'FxRateUpdated' AND stream_id = $1",
      [defaultFxRateStreamId],
    );
    return result.rowCount ?? 0;
  }
});
