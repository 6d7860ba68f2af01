import { randomUUID } from "node:crypto";
import { Agent } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { modelPriceStreamIdOf } from "../../../src/billing/commands/set-model-price";
import { costWonOf } from "../../../src/billing/holds/hold-pricing";
import {
  createPricingReadModel,
  type PricingInForce,
} from "../../../src/billing/read-models/pricing-read-model";
import type { UsageTokens } from "../../../src/ledger/events";
import { compareLogPositions, type LogPosition } from "../../../src/ledger/store/log-position";
import { type GatewayHarness, startGatewayHarness, testSecrets } from "../../support/gateway-harness";
import { callJson } from "../../support/json-call";

/**
 * A price changed is what the next request is held and pended at, on the process that changed it and on
 * any other (told by the projections' NOTIFY): its pending cost is then its charge (C7), and its hold
 * covers it (C10). Before, a gateway priced holds from memory for 5 s after a change, and past that went on
 * with the old pricing while a fresh one loaded: a 1000× rise let 20 requests on ₩100 end at −₩58,754.
 *
 * The gateway runs no billing workers here: a charge waits for the pricing projections, and that wait
 * drops the pricing this process holds in memory, so with a worker beside it every charge would empty the
 * memory the test is about. A pending cost is compared with the charge the reconciler's formula gives it
 * under the pricing in force (`costWonOf`, the same amount to the digit:
 * test/ledger/charge-breakdown-sql.property.test.ts).
 */

const dispatcher = new Agent({ connections: 20 });
const model = "delta-4.5-haiku";

describe("pricing changes and the holds priced after them", () => {
  let harness: GatewayHarness;
  let key = "";

  beforeAll(async () => {
    harness = await startGatewayHarness({
      label: "pricing_changes",
      billing: { runWorkers: false },
      service: { adminToken: testSecrets.adminToken },
    });
    const session = await harness.session("priced");
    key = (await harness.issueKey(session)).key;
    await harness.topUp({ kind: "user", id: "priced" }, "1000000");
  }, 60_000);
  afterAll(async () => {
    await harness?.close();
  });

  async function chat(): Promise<string> {
    const response = await fetch(`${harness.baseUrl}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model, max_tokens: 40, messages: [{ role: "user", content: "Price me" }] }),
      // @ts-expect-error undici's dispatcher option, which the DOM typing of fetch does not know
      dispatcher,
    });
    expect(response.status).toBe(200);
    await response.arrayBuffer();
    return response.headers.get("x-request-id")!;
  }

  interface Recorded {
    pendingWon: string;
    tokens: UsageTokens;
    startedAt: string;
  }

  /** The request's usage as recorded (its pending cost), once logged. */
  async function recorded(requestId: string): Promise<Recorded> {
    for (let attempt = 0; attempt < 400; attempt++) {
      const result = await harness.service.ledger.pool.query<{ data: Recorded }>(
        "SELECT data FROM ledger_events WHERE stream_id = $1 AND type = 'UsageRecorded'",
        [`usage-${requestId}`],
      );
      if (result.rows[0]) return result.rows[0].data;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error(`the usage of ${requestId} was never recorded`);
  }

  /** The pricing in force for a request of `model` started at `startedAt`, as the reconciler reads it. */
  async function pricingAt(startedAt: string): Promise<PricingInForce> {
    const [pricing] = await createPricingReadModel(harness.service.ledger.pool).pricingAt([
      { model, organizationId: null, startedAt: new Date(startedAt) },
    ]);
    return pricing!;
  }

  /** A request that puts the pricing of the day in memory, pended at its charge: that pricing. */
  async function pricingInMemory(): Promise<PricingInForce> {
    const usage = await recorded(await chat());
    const pricing = await pricingAt(usage.startedAt);
    expect(usage.pendingWon).toBe(costWonOf(pricing, usage.tokens));
    return pricing;
  }

  /** A request after a change is pended at its charge under the new price, which the old would not give. */
  async function expectPendedAtItsCharge(after: Recorded, oldPricing: PricingInForce): Promise<void> {
    const charge = costWonOf(await pricingAt(after.startedAt), after.tokens);
    expect(after.pendingWon).toBe(charge);
    expect(costWonOf(oldPricing, after.tokens)).not.toBe(charge);
  }

  /**
   * This process hearing of a pricing change by the projections' NOTIFY: the waiter tells its copies in the
   * order they were added, so the hold pricing has dropped what it had by the time this observer hears of
   * the batch. `through` resolves once a batch that changed pricing has applied `position`.
   */
  function notifiedOfPricingChange(): { through(position: LogPosition): Promise<void> } {
    const heard: LogPosition[] = [];
    let wake = () => {};
    harness.service.waiter.addLocalReadModel({
      projections: [],
      checkpointsAdvanced: (change) => {
        if (change?.pricingChanged === true) heard.push(change.to);
        wake();
      },
      catchUpTo: async () => {},
    });
    return {
      async through(position) {
        const deadlineMs = Date.now() + 20_000;
        while (!heard.some((to) => compareLogPositions(to, position) >= 0)) {
          if (Date.now() > deadlineMs) throw new Error("no notification of the price change within 20 s");
          await new Promise<void>((resolve) => {
            wake = resolve;
            setTimeout(resolve, 100);
          });
        }
      },
    };
  }

  it("given a price raised through the admin API, then the next request is pended at its charge", async () => {
    const oldPricing = await pricingInMemory();
    const raised = await callJson(
      harness.url,
      "PUT",
      `/admin/models/${model}/price`,
      testSecrets.adminToken,
      {
        inputUsdPer1M: "800",
        outputUsdPer1M: "4000",
      },
    );
    expect(raised.status).toBe(200);

    const after = await recorded(await chat());

    await expectPendedAtItsCharge(after, oldPricing);
  });

  it("given a price raised by another process, then a request once its NOTIFY has come is pended at its charge", async () => {
    const oldPricing = await pricingInMemory();
    // Appended as another process's command would: this process learns of it only by the NOTIFY.
    const heard = notifiedOfPricingChange();
    const appended = await harness.service.ledger.store.append({
      streamId: modelPriceStreamIdOf(model),
      expectedVersion: "any",
      events: [
        {
          eventId: randomUUID(),
          event: {
            type: "ModelPriceSet",
            data: {
              model,
              inputUsdPerMillionTokens: "1600",
              outputUsdPerMillionTokens: "8000",
              cachedInputUsdPerMillionTokens: "1600",
            },
            metadata: { actor: "admin", occurredAt: new Date().toISOString() },
          },
        },
      ],
    });
    await heard.through(appended.position);

    const after = await recorded(await chat());

    await expectPendedAtItsCharge(after, oldPricing);
  });
});
