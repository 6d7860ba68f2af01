import { describe, expect, it } from "vitest";
import { chargeUsages } from "../../src/billing/charging/charge-usage";
import {
  createPricingReadModel,
  PricingUnavailableError,
} from "../../src/billing/read-models/pricing-read-model";
import { createDependencyProbes } from "../../src/operations/dependency-probes";
import { createProbeMetrics } from "../../src/operations/probe-metrics";
import { chargesOf, modelPriceSet, usageRecorded } from "../billing/billing-ledger-fixtures";
import { eventually, queueBackendCases, useChargeableLedger } from "../workers/queue-test-support";

/**
 * A usage the reconciler cannot charge — its model has no price at the instant it started, an operator must
 * set one — stays pending: retried, dropped by its job, enqueued again by the sweep, for ever. It never
 * reaches the charge lag (observed on a charge) nor a queue depth worth paging on (a job or two), so the age
 * of the oldest uncharged usage is a gauge of its own, which ChargesBehind pages on (docs/operations.md).
 */

const account = { kind: "user", id: "pending-age" } as const;
const requestStart = "2026-11-20T03:00:00.000Z";
const postgresqlBackend = queueBackendCases[0]!;

describe("the pending charges' age", () => {
  const ledger = useChargeableLedger("pending_charge_age", postgresqlBackend, account);

  const chargeDependencies = () => ({
    store: ledger.harness.store,
    waiter: ledger.projections.waiter,
    pricing: createPricingReadModel(ledger.harness.ledger.pool),
    clock: () => new Date(),
    projectionWaitTimeoutMs: 10_000,
  });

  const pendingRequestIds = async () =>
    (
      await ledger.harness.ledger.pool.query<{ request_id: string }>(
        "SELECT request_id FROM projection_pending_charges ORDER BY request_id",
      )
    ).rows.map((row) => row.request_id);

  it("given a usage of a model without price, when the reconciler fails to charge it, then the gauge shows its age until it is charged", async () => {
    // Given
    await ledger.harness.append(
      usageRecorded({ requestId: "req_priced", account, startedAt: requestStart }),
      usageRecorded({ requestId: "req_unpriced", account, startedAt: requestStart, model: "no-such-model" }),
    );

    // When
    const outcomes = await chargeUsages(chargeDependencies(), ["req_priced", "req_unpriced"]);

    // Then: the priced one is charged, the other is not charged at all, not at some wrong price
    expect(outcomes.get("req_priced")).toMatchObject({ status: "fulfilled", value: { kind: "charged" } });
    const unpriced = outcomes.get("req_unpriced");
    expect(unpriced?.status === "rejected" && unpriced.reason).toBeInstanceOf(PricingUnavailableError);
    expect(await chargesOf(ledger.harness, "req_unpriced")).toHaveLength(0);
    await eventually("only the unpriced usage is pending", async () => {
      const pending = await pendingRequestIds();
      return pending.length === 1 && pending[0] === "req_unpriced";
    });
    const recorded = await ledger.harness.ledger.pool.query<{ recorded_at: Date }>(
      "SELECT recorded_at FROM projection_pending_charges WHERE request_id = 'req_unpriced'",
    );
    let now = new Date(recorded.rows[0]!.recorded_at.getTime() + 42_000);
    const probes = createDependencyProbes({
      pool: ledger.harness.ledger.pool,
      store: ledger.harness.store,
      queueBackend: ledger.backend,
      clock: () => now,
    });
    try {
      expect(await probes.pendingChargeAgeSeconds()).toBeCloseTo(42, 3);
      const metrics = await createProbeMetrics(() => probes, 2_000).metrics();
      expect(metrics).toContain("won_gateway_pending_charge_age_seconds 42");

      // When an operator sets the model's price, the usage is charged and no age is left behind
      await ledger.harness.append(
        modelPriceSet(
          "no-such-model",
          { input: "1", cachedInput: "1", output: "1" },
          "2026-11-19T15:00:00.000Z",
        ),
      );
      // (The sweep enqueues it again until it is charged: the price reaches the projections meanwhile.)
      await eventually("the usage was charged", async () => {
        const retried = await chargeUsages(chargeDependencies(), ["req_unpriced"]);
        return retried.get("req_unpriced")?.status === "fulfilled";
      });
      expect(await chargesOf(ledger.harness, "req_unpriced")).toHaveLength(1);
      now = new Date(now.getTime() + 60_000);
      await eventually("no usage is pending", async () => (await pendingRequestIds()).length === 0);
      expect(await probes.pendingChargeAgeSeconds()).toBe(0);
    } finally {
      await probes.close();
    }
  });
});
