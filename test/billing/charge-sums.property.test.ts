import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chargeUsage } from "../../src/billing/charging/charge-usage";
import { createPricingReadModel } from "../../src/billing/read-models/pricing-read-model";
import { Money, sumMoney } from "../../src/kernel/money";
import { ProjectionWaiter } from "../../src/ledger/projection/projection-waiter";
import type { RecordedEventOf } from "../../src/ledger/store/event-store";
import { type LedgerHarness, openLedgerHarness } from "../support/ledger-harness";
import {
  creditToppedUp,
  discountSet,
  fxRateUpdated,
  modelPriceSet,
  projectThrough,
  usageRecorded,
} from "./billing-ledger-fixtures";

/**
 * Property (issue 5): whatever the usages, the balance of an account moves by exactly the sum of its
 * charges — no rounding between the charge events and the balances projection, no charge lost or doubled.
 */

const settingsAt = "2026-11-19T15:00:00.000Z";
let harness: LedgerHarness;
let run = 0;

beforeAll(async () => {
  harness = await openLedgerHarness("charge_sums");
  await harness.append(
    modelPriceSet("alpha-5.4", { input: "1.25", cachedInput: "0.125", output: "10" }, settingsAt),
    modelPriceSet("delta-4.6-opus", { input: "5", cachedInput: "0.5", output: "25" }, settingsAt),
    discountSet(null, "acme", "0.137", settingsAt),
    fxRateUpdated({ appliesOn: "2026-11-20", rateDate: "2026-11-19", rateKrwPerUsd: "1483.37" }, settingsAt),
  );
  await harness.project();
});

afterAll(async () => {
  await harness.dispose();
});

const usageArbitrary = fc
  .record({
    input: fc.integer({ min: 0, max: 2_000_000 }),
    cachedShare: fc.double({ min: 0, max: 1, noNaN: true }),
    output: fc.integer({ min: 0, max: 500_000 }),
    reasoningShare: fc.double({ min: 0, max: 1, noNaN: true }),
    cachedReported: fc.boolean(),
    model: fc.constantFrom("alpha-5.4", "delta-4.6-opus", "zeta-mini"),
    organization: fc.boolean(),
  })
  .map((usage) => ({
    model: usage.model,
    organization: usage.organization,
    tokens: {
      input: usage.input,
      cached: usage.cachedReported ? Math.floor(usage.input * usage.cachedShare) : null,
      output: usage.output,
      reasoning: Math.floor(usage.output * usage.reasoningShare),
    },
  }));

describe("charges and balances", () => {
  it("moves each balance by exactly the sum of its charges", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(usageArbitrary, { minLength: 1, maxLength: 12 }), async (usages) => {
        // Given: fresh accounts for this run, each topped up with ₩1,000,000
        run += 1;
        const user = { kind: "user", id: `user-${run}` } as const;
        const organization = { kind: "organization", id: `org-${run}` } as const;
        await harness.append(
          creditToppedUp(user, "1000000", settingsAt),
          creditToppedUp(organization, "1000000", settingsAt),
        );
        const requestIds = usages.map((_, index) => `req_${run}_${index}`);
        await harness.append(
          ...usages.map((usage, index) =>
            usageRecorded({
              requestId: requestIds[index]!,
              account: usage.organization ? organization : user,
              model: usage.model,
              tokens: usage.tokens,
              startedAt: "2026-11-20T03:00:00.000Z",
            }),
          ),
        );
        await harness.project();

        // When
        const dependencies = {
          store: harness.store,
          waiter: new ProjectionWaiter(harness.ledger.pool, harness.database.url, 20),
          pricing: createPricingReadModel(harness.ledger.pool),
          clock: () => new Date("2026-11-20T03:00:05.000Z"),
          projectionWaitTimeoutMs: 5_000,
        };
        for (const requestId of requestIds) {
          const outcome = await chargeUsage(dependencies, requestId);
          if (outcome.kind === "charged") await projectThrough(harness, outcome.position);
        }

        // Then
        for (const account of [user, organization]) {
          const charged: Money[] = [];
          for (const requestId of requestIds) {
            for (const event of await harness.store.readStream(`usage-${requestId}`)) {
              if (event.type !== "UsageCharged") continue;
              const charge = event as RecordedEventOf<"UsageCharged">;
              if (charge.data.account.id === account.id) charged.push(new Money(charge.data.amountWon));
            }
          }
          const balance = await harness.ledger.pool.query<{ balance_won: string }>(
            "SELECT balance_won::text AS balance_won FROM projection_balances WHERE account_kind = $1 AND account_id = $2",
            [account.kind, account.id],
          );
          const moved = new Money("1000000").minus(balance.rows[0]!.balance_won);
          expect(moved.equals(sumMoney(charged))).toBe(true);
        }
      }),
      { numRuns: 15, seed: 20261120 },
    );
  }, 120_000);
});
