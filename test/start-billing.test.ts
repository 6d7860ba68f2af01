import { randomUUID } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
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
    billing = await startBilling({
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
    });
  });

  afterEach(async () => {
    await billing.close();
    await projections.stop();
    if (redisUrl !== undefined) await removeQueueData({ kind: "redis", redisUrl, prefix: queuePrefix });
    await harness.dispose();
  });

  it("seeds on attach and charges a usage handed to the enqueuer", async () => {
    // Given
    await billing.attach({ ledger: harness.ledger, waiter: projections.waiter });

    // When
    await harness.append(
      usageRecorded({
        requestId: "req_composed",
        account: { kind: "user", id: "frank" },
        model: "alpha-5.4-mini",
        tokens: { input: 1_000_000, cached: 0, output: 0, reasoning: 0 },
        startedAt: new Date().toISOString(),
      }),
    );
    billing.charges.enqueueCharge("req_composed");

    // Then: the catalog's 0.25 USD per 1M input tokens at the default ₩1350.5 per USD
    await eventually(
      "the usage is charged",
      async () => (await chargesOf(harness, "req_composed")).length === 1,
    );
    const [charge] = await chargesOf(harness, "req_composed");
    expect(charge!.data).toMatchObject({ amountWon: "337.625000" });
  });
});
