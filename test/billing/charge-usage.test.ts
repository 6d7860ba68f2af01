import { randomUUID } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  type ChargeUsageDependencies,
  chargeUsage,
  chargeUsages,
  UsageNotRecordedError,
} from "../../src/billing/charging/charge-usage";
import { usageChargedEventId } from "../../src/billing/commands/deterministic-event-id";
import {
  createPricingReadModel,
  PricingUnavailableError,
} from "../../src/billing/read-models/pricing-read-model";
import { canonicalMoney } from "../../src/kernel/money";
import type { AccountReference } from "../../src/ledger/events";
import { ProjectionWaiter } from "../../src/ledger/projection/projection-waiter";
import type { RecordedEventOf } from "../../src/ledger/store/event-store";
import type { LogPosition } from "../../src/ledger/store/log-position";
import { type LedgerHarness, openLedgerHarness } from "../support/ledger-harness";
import {
  chargesOf,
  creditToppedUp,
  discountSet,
  fxRateUpdated,
  modelPriceSet,
  projectThrough,
  usageRecorded,
} from "./billing-ledger-fixtures";

/**
 * ChargeUsage against a real ledger: given prices, discounts and rates recorded at fixed instants and a
 * usage that started at a fixed instant, then exactly the C7 charge, with the inputs it was computed from.
 */

const acme = { kind: "organization", id: "acme" } as const;
const alice = { kind: "user", id: "alice" } as const;
const settingsAt = "2026-11-19T15:00:00.000Z"; // 2026-11-20 00:00 KST
const requestStart = "2026-11-20T03:00:00.000Z"; // 2026-11-20 12:00 KST
const chargedAt = new Date("2026-11-20T03:00:05.000Z");

let harness: LedgerHarness;
let dependencies: ChargeUsageDependencies;
let sequence = 0;

beforeEach(async () => {
  harness = await openLedgerHarness(`charge_usage_${sequence++}`);
  dependencies = {
    store: harness.store,
    waiter: new ProjectionWaiter(harness.ledger.pool, harness.database.url, 20),
    pricing: createPricingReadModel(harness.ledger.pool),
    clock: () => chargedAt,
    // Waiting for projections includes waiting out other test files' transactions on the shared server.
    projectionWaitTimeoutMs: 30_000,
  };
});

afterEach(async () => {
  await harness.dispose();
});

async function givenStandardPricing(): Promise<void> {
  await harness.append(
    modelPriceSet("alpha-5.4", { input: "1.25", cachedInput: "0.125", output: "10" }, settingsAt),
    discountSet(null, "acme", "0.15", settingsAt),
    discountSet("alpha-5.4", null, "0.05", settingsAt),
    fxRateUpdated({ appliesOn: "2026-11-20", rateDate: "2026-11-19", rateKrwPerUsd: "1483.4" }, settingsAt),
  );
}

/** The account's funds as admission reads them (inline, moved by the append itself: nothing to project). */
async function fundsOf(account: AccountReference): Promise<{ balanceWon: string; pendingWon: string }> {
  const funds = await harness.ledger.pool.query<{ balance_won: string; pending_won: string }>(
    `SELECT balance_won::text, pending_won::text FROM account_funds
     WHERE account_kind = $1 AND account_id = $2`,
    [account.kind, account.id],
  );
  const row = funds.rows[0]!;
  return { balanceWon: canonicalMoney(row.balance_won), pendingWon: canonicalMoney(row.pending_won) };
}

describe("ChargeUsage", () => {
  it("charges an organization key with the price, organization discount and FX rate in force at its start", async () => {
    // Given
    await givenStandardPricing();
    await harness.append(
      usageRecorded({
        requestId: "req_org1",
        account: acme,
        tokens: { input: 1_200, cached: 200, output: 350, reasoning: 50 },
        startedAt: requestStart,
      }),
    );
    await harness.project();

    // When
    const outcome = await chargeUsage(dependencies, "req_org1");

    // Then: usd = (1000 × 1.25 + 200 × 0.125 + 350 × 10) / 1e6 = 0.004775
    //       won = 0.004775 × 1483.4 × (1 − 0.15) = 6.02074975 → 6.020750 (half-up at the micro-won)
    expect(outcome).toMatchObject({ kind: "charged", amountWon: "6.020750" });
    const [charge] = (await chargesOf(harness, "req_org1")) as RecordedEventOf<"UsageCharged">[];
    expect(charge!.eventId).toBe(usageChargedEventId("req_org1"));
    expect(charge!.streamVersion).toBe(1);
    expect(charge!.data).toEqual({
      requestId: "req_org1",
      keyId: expect.any(String),
      account: acme,
      model: "alpha-5.4",
      endpoint: "chat.completions",
      startedAt: requestStart,
      amountWon: "6.020750",
      releasedPendingWon: null,
      breakdown: {
        tokens: { input: 1_200, cached: 200, output: 350, reasoning: 50 },
        inputUsdPerMillionTokens: "1.25",
        cachedInputUsdPerMillionTokens: "0.125",
        outputUsdPerMillionTokens: "10",
        usd: "0.004775",
        fxRateKrwPerUsd: "1483.4",
        fxRateDate: "2026-11-19",
        discountRate: "0.15",
        amountWon: "6.020750",
        usageSource: "upstream",
      },
    });
    expect(charge!.metadata).toMatchObject({
      actor: "system:reconciler",
      correlationId: "req_org1",
      occurredAt: chargedAt.toISOString(),
    });
  });

  it("gives a personal key only the any-organization rule and prices a not-reported cached count as 0", async () => {
    // Given
    await givenStandardPricing();
    await harness.append(
      usageRecorded({
        requestId: "req_personal",
        account: alice,
        tokens: { input: 1_000, cached: null, output: 100, reasoning: null },
        startedAt: requestStart,
        usageSource: "estimated",
      }),
    );
    await harness.project();

    // When
    await chargeUsage(dependencies, "req_personal");

    // Then: usd = (1000 × 1.25 + 100 × 10) / 1e6 = 0.00225; won = 0.00225 × 1483.4 × 0.95 = 3.1707675
    const [charge] = (await chargesOf(harness, "req_personal")) as RecordedEventOf<"UsageCharged">[];
    expect(charge!.data.amountWon).toBe("3.170768");
    expect(charge!.data.breakdown).toMatchObject({
      tokens: { input: 1_000, cached: null, output: 100, reasoning: null },
      discountRate: "0.05",
      usageSource: "estimated",
    });
  });

  it("ignores a price set after the request started, even when it is projected before the charge", async () => {
    // Given
    await givenStandardPricing();
    await harness.append(
      usageRecorded({ requestId: "req_before_change", account: alice, startedAt: requestStart }),
      modelPriceSet(
        "alpha-5.4",
        { input: "99", cachedInput: "99", output: "99" },
        "2026-11-20T03:00:00.001Z",
      ),
    );
    await harness.project();

    // When
    await chargeUsage(dependencies, "req_before_change");

    // Then: 1000 × 1.25 + 500 × 10 = 6250 → 0.00625 USD × 1483.4 × 0.95 = 8.8076875
    const [charge] = (await chargesOf(harness, "req_before_change")) as RecordedEventOf<"UsageCharged">[];
    expect(charge!.data.breakdown.inputUsdPerMillionTokens).toBe("1.25");
    expect(charge!.data.amountWon).toBe("8.807688");
  });

  it("uses the latest earlier rate when the request's Seoul day has none, and records its rate date", async () => {
    // Given: rates for 11-18 and 11-19; the 11-20 rate is recorded only after the request started
    await harness.append(
      modelPriceSet("alpha-5.4", { input: "1", cachedInput: "1", output: "1" }, settingsAt),
      fxRateUpdated(
        { appliesOn: "2026-11-18", rateDate: "2026-11-17", rateKrwPerUsd: "1400" },
        "2026-11-17T15:05:00.000Z",
      ),
      fxRateUpdated(
        { appliesOn: "2026-11-19", rateDate: "2026-11-18", rateKrwPerUsd: "1470.5" },
        "2026-11-18T15:05:00.000Z",
      ),
      fxRateUpdated(
        { appliesOn: "2026-11-20", rateDate: "2026-11-19", rateKrwPerUsd: "1999" },
        "2026-11-20T03:00:00.500Z",
      ),
      usageRecorded({
        requestId: "req_no_rate_today",
        account: alice,
        tokens: { input: 1_000_000, cached: 0, output: 0, reasoning: 0 },
        startedAt: requestStart,
      }),
    );
    await harness.project();

    // When
    await chargeUsage(dependencies, "req_no_rate_today");

    // Then: 1 USD × 1470.5
    const [charge] = (await chargesOf(harness, "req_no_rate_today")) as RecordedEventOf<"UsageCharged">[];
    expect(charge!.data.breakdown).toMatchObject({ fxRateKrwPerUsd: "1470.5", fxRateDate: "2026-11-18" });
    expect(charge!.data.amountWon).toBe("1470.500000");
  });

  it("takes the Seoul date of the start: 23:30 UTC on the 19th is already the 20th in Seoul", async () => {
    // Given
    await harness.append(
      modelPriceSet("alpha-5.4", { input: "1", cachedInput: "1", output: "1" }, "2026-11-18T00:00:00.000Z"),
      fxRateUpdated(
        { appliesOn: "2026-11-19", rateDate: "2026-11-18", rateKrwPerUsd: "1400" },
        "2026-11-18T15:05:00.000Z",
      ),
      fxRateUpdated(
        { appliesOn: "2026-11-20", rateDate: "2026-11-19", rateKrwPerUsd: "1500" },
        "2026-11-19T15:05:00.000Z",
      ),
      usageRecorded({
        requestId: "req_seoul_midnight",
        account: alice,
        tokens: { input: 1_000_000, cached: 0, output: 0, reasoning: 0 },
        startedAt: "2026-11-19T23:30:00.000Z",
      }),
    );
    await harness.project();

    // When
    await chargeUsage(dependencies, "req_seoul_midnight");

    // Then
    const [charge] = (await chargesOf(harness, "req_seoul_midnight")) as RecordedEventOf<"UsageCharged">[];
    expect(charge!.data.breakdown.fxRateDate).toBe("2026-11-19");
  });

  it("falls back to the catalog default price when no price was ever recorded", async () => {
    // Given: alpha-5.4-mini defaults to 0.25 / 2.00 / 0.025
    await harness.append(
      fxRateUpdated({ appliesOn: "2026-11-20", rateDate: "2026-11-19", rateKrwPerUsd: "1000" }, settingsAt),
      usageRecorded({
        requestId: "req_catalog",
        account: alice,
        model: "alpha-5.4-mini",
        tokens: { input: 1_000_000, cached: 0, output: 1_000_000, reasoning: 0 },
        startedAt: requestStart,
      }),
    );
    await harness.project();

    // When
    await chargeUsage(dependencies, "req_catalog");

    // Then: (0.25 + 2) × 1000
    const [charge] = (await chargesOf(harness, "req_catalog")) as RecordedEventOf<"UsageCharged">[];
    expect(charge!.data.amountWon).toBe("2250.000000");
  });

  it("waits for the pricing projections to reach the usage before pricing it", async () => {
    // Given: the price and the usage are appended but not projected yet
    await harness.append(
      modelPriceSet("alpha-5.4", { input: "2", cachedInput: "2", output: "2" }, settingsAt),
      fxRateUpdated({ appliesOn: "2026-11-20", rateDate: "2026-11-19", rateKrwPerUsd: "1000" }, settingsAt),
      usageRecorded({
        requestId: "req_waits",
        account: alice,
        tokens: { input: 1_000_000, cached: 0, output: 0, reasoning: 0 },
        startedAt: requestStart,
      }),
    );

    // When: the charge starts first, the projections catch up afterwards
    const charging = chargeUsage(dependencies, "req_waits");
    await new Promise((resolve) => setTimeout(resolve, 100));
    await harness.project();

    // Then: priced with the recorded 2 USD, not the catalog's 1.25
    await expect(charging).resolves.toMatchObject({ kind: "charged", amountWon: "2000.000000" });
  });

  it("charges once however often and however concurrently it runs, releasing its pending once", async () => {
    // Given: the usage's cost as the gateway recorded it is pending. It need not equal the charge (the
    // gateway may price with terms it held in memory): the charge releases what was recorded.
    await givenStandardPricing();
    await harness.append(
      creditToppedUp(acme, "100", settingsAt),
      usageRecorded({ requestId: "req_once", account: acme, startedAt: requestStart, pendingWon: "7.88" }),
    );
    await harness.project();
    expect(await fundsOf(acme)).toEqual({ balanceWon: "100", pendingWon: "7.88" });

    // When: five runs at once, then one more
    const outcomes = await Promise.all(
      Array.from({ length: 5 }, () => chargeUsage(dependencies, "req_once")),
    );
    const again = await chargeUsage(dependencies, "req_once");

    // Then: the store kept one charge (racers colliding on the derived event id are told "charged" too)
    expect(
      outcomes.every((outcome) => outcome.kind === "charged" || outcome.kind === "already-charged"),
    ).toBe(true);
    expect(again).toEqual({ kind: "already-charged" });
    const charges = await chargesOf(harness, "req_once");
    expect(charges).toHaveLength(1);
    // And the funds: the balance moved by exactly the charge, the pending it recorded is gone
    expect(await fundsOf(acme)).toEqual({ balanceWon: "92.119437", pendingWon: "0" });
    await projectThrough(harness, charges[0]!.position);
    const balance = await harness.ledger.pool.query(
      "SELECT charged_won::text AS charged FROM projection_balances WHERE account_id = 'acme'",
    );
    expect(balance.rows).toEqual([{ charged: "7.880563" }]);
  });

  it("is refused by the expected version when another writer charged the usage after its read", async () => {
    // Given: a usage, and a rival that charges it right after ChargeUsage has read the stream, under an
    // event id of its own: the derived id cannot recognise that charge, only the expected version can
    await givenStandardPricing();
    await harness.append(usageRecorded({ requestId: "req_raced", account: acme, startedAt: requestStart }));
    await harness.project();
    const rivalEventId = randomUUID();
    const rival: ChargeUsageDependencies = {
      ...dependencies,
      store: {
        readStream: (streamId) => harness.store.readStream(streamId),
        readStreams: (streamIds) => harness.store.readStreams(streamIds),
        append: (append) =>
          harness.store.append({
            ...append,
            events: append.events.map((event) => ({ ...event, eventId: rivalEventId })),
          }),
      },
    };
    const overtaken: ChargeUsageDependencies = {
      ...dependencies,
      store: {
        readStream: (streamId) => harness.store.readStream(streamId),
        readStreams: async (streamIds) => {
          const streams = await harness.store.readStreams(streamIds);
          await expect(chargeUsage(rival, "req_raced")).resolves.toMatchObject({ kind: "charged" });
          return streams;
        },
        append: (append) => harness.store.append(append),
      },
    };

    // When
    const outcome = await chargeUsage(overtaken, "req_raced");

    // Then: its append was refused, and the stream holds the rival's charge alone
    expect(outcome).toEqual({ kind: "already-charged" });
    const charges = await chargesOf(harness, "req_raced");
    expect(charges.map((charge) => [charge.eventId, charge.streamVersion])).toEqual([[rivalEventId, 1]]);
  });

  it("waits for a batch's latest usage, so one started after a price change gets the new price", async () => {
    // Given: usage A projected; then a new price and usage B, started after it, appended but not projected
    await givenStandardPricing();
    const million = { input: 1_000_000, cached: 0, output: 0, reasoning: 0 };
    await harness.append(
      usageRecorded({ requestId: "req_batch_a", account: alice, tokens: million, startedAt: requestStart }),
    );
    await harness.project();
    await harness.append(
      modelPriceSet("alpha-5.4", { input: "2", cachedInput: "2", output: "2" }, "2026-11-20T03:00:01.000Z"),
      usageRecorded({
        requestId: "req_batch_b",
        account: alice,
        tokens: million,
        startedAt: "2026-11-20T03:00:02.000Z",
      }),
    );
    // The projections catch up once the batch waits: a trigger, not a sleep
    const waitedFor: LogPosition[] = [];
    let waiting!: () => void;
    const waits = new Promise<void>((resolve) => {
      waiting = resolve;
    });
    const batch: ChargeUsageDependencies = {
      ...dependencies,
      waiter: {
        waitFor: (target, projections, timeoutMs) => {
          waitedFor.push(target);
          waiting();
          return dependencies.waiter.waitFor(target, projections, timeoutMs);
        },
      },
    };

    // When
    const charging = chargeUsages(batch, ["req_batch_a", "req_batch_b"]);
    await waits;
    await harness.project();
    const outcomes = await charging;

    // Then: A at 1.25 USD, B at 2 USD, each × 1483.4 × (1 − 0.05)
    expect(outcomes.get("req_batch_a")).toEqual({
      status: "fulfilled",
      value: expect.objectContaining({ kind: "charged", amountWon: "1761.537500" }),
    });
    expect(outcomes.get("req_batch_b")).toEqual({
      status: "fulfilled",
      value: expect.objectContaining({ kind: "charged", amountWon: "2818.460000" }),
    });
    const [usageB] = await harness.store.readStream("usage-req_batch_b");
    expect(waitedFor).toEqual([usageB!.position]);
  });

  it("refuses a request that was never recorded", async () => {
    await expect(chargeUsage(dependencies, "req_unknown")).rejects.toBeInstanceOf(UsageNotRecordedError);
  });

  it("leaves the usage pending when no FX rate applies at all", async () => {
    // Given
    await harness.append(usageRecorded({ requestId: "req_no_fx", account: alice, startedAt: requestStart }));
    await harness.project();

    // When / Then
    await expect(chargeUsage(dependencies, "req_no_fx")).rejects.toBeInstanceOf(PricingUnavailableError);
    expect(await chargesOf(harness, "req_no_fx")).toHaveLength(0);
  });
});
