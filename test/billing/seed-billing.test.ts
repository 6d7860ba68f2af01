import pg from "pg";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  defaultFxRateStreamId,
  type SeedBillingDependencies,
  seedBilling,
} from "../../src/billing/commands/seed-billing";
import { billingLimits } from "../../src/kernel/limits";
import { listModels } from "../../src/providers/catalog";
import { type LedgerHarness, openLedgerHarness } from "../support/ledger-harness";
import { fxRateUpdated, modelPriceSet, runProjections, silentLogger } from "./billing-ledger-fixtures";

/**
 * First start (C2, issue 5 §3): the catalog's default prices and, when the ledger has no rate at all,
 * FX_USDKRW_DEFAULT for today, source "default". Any number of starts, at once or one after the other,
 * leave one seed per model and one default rate.
 */

// 2026-11-20 08:00 in Seoul.
const startedAt = new Date("2026-11-19T23:00:00.000Z");

let harness: LedgerHarness;
let projections: Awaited<ReturnType<typeof runProjections>>;
let dependencies: SeedBillingDependencies;
let sequence = 0;
const openTransactions: { release(): Promise<void> }[] = [];

beforeEach(async () => {
  harness = await openLedgerHarness(`seed_${sequence++}`);
  projections = await runProjections(harness);
  dependencies = {
    store: harness.store,
    database: harness.ledger.pool,
    waiter: projections.waiter,
    clock: () => startedAt,
    logger: silentLogger,
    defaultFxRateKrwPerUsd: "1400",
  };
});

afterEach(async () => {
  for (const transaction of openTransactions.splice(0)) await transaction.release();
  await projections.stop();
  await harness.dispose();
});

/**
 * Straight from the table: `readAll` only shows events older than the oldest running transaction on the
 * whole server, and a parallel test file may hold one open (a rebuild) for a while.
 */
async function eventsOfType(type: string) {
  const result = await harness.ledger.pool.query<{ stream_id: string; data: unknown; metadata: unknown }>(
    "SELECT stream_id, data, metadata FROM ledger_events WHERE type = $1 ORDER BY stream_id",
    [type],
  );
  return result.rows.map((row) => ({ streamId: row.stream_id, data: row.data, metadata: row.metadata }));
}

/**
 * A write transaction left open on the server: every projection waits for it to end (the store shows readers
 * only transactions older than the oldest one running).
 */
async function holdProjectionsBack(): Promise<{ release(): Promise<void> }> {
  const client = new pg.Client({ connectionString: harness.database.url });
  await client.connect();
  await client.query("BEGIN");
  await client.query("SELECT pg_current_xact_id()");
  let open = true;
  const transaction = {
    async release() {
      if (!open) return;
      open = false;
      await client.query("COMMIT");
      await client.end();
    },
  };
  openTransactions.push(transaction);
  return transaction;
}

/** Whether `promise` is still pending after `ms`. */
async function pendingAfter(promise: Promise<unknown>, ms: number): Promise<boolean> {
  const marker = Symbol("pending");
  const first = await Promise.race([
    promise,
    new Promise((resolve) => setTimeout(() => resolve(marker), ms)),
  ]);
  return first === marker;
}

describe("seedBilling", () => {
  it("records every catalog price and the default rate once, however many processes start", async () => {
    // When: three processes start at once, then one restarts
    await Promise.all([seedBilling(dependencies), seedBilling(dependencies), seedBilling(dependencies)]);
    await seedBilling(dependencies);

    // Then
    const prices = await eventsOfType("ModelPriceSet");
    expect(prices).toHaveLength(listModels().length);
    const alpha = prices.find((event) => event.streamId === "model-price-alpha-5.4");
    expect(alpha?.data).toEqual({
      model: "alpha-5.4",
      inputUsdPerMillionTokens: "1.25",
      outputUsdPerMillionTokens: "10",
      cachedInputUsdPerMillionTokens: "0.125",
    });
    const rates = await eventsOfType("FxRateUpdated");
    expect(rates).toHaveLength(1);
    expect(rates[0]).toMatchObject({
      streamId: defaultFxRateStreamId,
      data: { appliesOn: "2026-11-20", rateDate: "2026-11-20", rateKrwPerUsd: "1400", source: "default" },
      metadata: { actor: "system:first-start" },
    });
  });

  it("leaves a price the admin already set, and records no default when a rate exists", async () => {
    // Given
    await harness.append(
      modelPriceSet("alpha-5.4", { input: "3", cachedInput: "3", output: "3" }, "2026-11-01T00:00:00.000Z"),
      fxRateUpdated(
        { appliesOn: "2026-11-01", rateDate: "2026-10-31", rateKrwPerUsd: "1450" },
        "2026-11-01T00:00:00.000Z",
      ),
    );

    // When
    const outcome = await seedBilling(dependencies);

    // Then
    expect(outcome).toEqual({ fxRateSeeded: false });
    const alphaPrices = await harness.store.readStream("model-price-alpha-5.4");
    expect(alphaPrices.map((event) => event.data)).toEqual([
      {
        model: "alpha-5.4",
        inputUsdPerMillionTokens: "3",
        cachedInputUsdPerMillionTokens: "3",
        outputUsdPerMillionTokens: "3",
      },
    ]);
    expect(await eventsOfType("ModelPriceSet")).toHaveLength(listModels().length);
    expect(await eventsOfType("FxRateUpdated")).toHaveLength(1);
  });

  // Held back for a few of the wait's rounds, not for a start's whole wait (start-billing.test.ts shows a
  // start outlasted): every test file sharing the server waits on a transaction held open here.
  it("given the projections held back through several rounds of the wait, when they catch up, then the default rate is recorded", async () => {
    // Given
    const openTransaction = await holdProjectionsBack();
    const seeding = seedBilling(dependencies);
    expect(await pendingAfter(seeding, billingLimits.seedProjectionWaitRoundMs * 2.5)).toBe(true);
    expect(await eventsOfType("FxRateUpdated")).toHaveLength(0);

    // When
    await openTransaction.release();

    // Then
    expect(await seeding).toEqual({ fxRateSeeded: true });
    expect(await eventsOfType("FxRateUpdated")).toHaveLength(1);
  });

  it("given the projections held back, when the process stops, then the wait ends with no rate recorded", async () => {
    // Given
    await holdProjectionsBack();
    const stop = new AbortController();
    const seeding = seedBilling(dependencies, { signal: stop.signal });
    expect(await pendingAfter(seeding, 1_500)).toBe(true);

    // When
    stop.abort();

    // Then: within a round of the wait
    expect(await pendingAfter(seeding, billingLimits.seedProjectionWaitRoundMs + 2_000)).toBe(false);
    expect(await seeding).toEqual({ fxRateSeeded: false });
    expect(await eventsOfType("FxRateUpdated")).toHaveLength(0);
  });
});
