import { randomUUID } from "node:crypto";
import { Agent } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { modelPriceStreamIdOf } from "../../../src/billing/commands/set-model-price";
import { type GatewayHarness, startGatewayHarness, testSecrets } from "../../support/gateway-harness";
import { callJson } from "../../support/json-call";

/**
 * A price changed is what the next request is held and pended at, on the process that changed it and on
 * any other (told by the projections' NOTIFY): its pending cost is then its charge (C7), and its hold
 * covers it (C10). Before, a gateway priced holds from memory for 5 s after a change, and past that went on
 * with the old pricing while a fresh one loaded: a 1000× rise let 20 requests on ₩100 end at −₩58,754.
 */

const dispatcher = new Agent({ connections: 20 });
const model = "delta-4.5-haiku";

describe("pricing changes and the holds priced after them", () => {
  let harness: GatewayHarness;
  let key = "";

  beforeAll(async () => {
    harness = await startGatewayHarness({
      label: "pricing_changes",
      billing: {},
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

  /** The request's pending cost and its charge, once charged. */
  async function pendingAndCharge(requestId: string): Promise<{ pending: string; charged: string }> {
    for (let attempt = 0; attempt < 400; attempt++) {
      const result = await harness.service.ledger.pool.query<{
        pending: string | null;
        charged: string | null;
      }>(
        `SELECT max(data->>'pendingWon') FILTER (WHERE type = 'UsageRecorded') AS pending,
                max(data->>'amountWon') FILTER (WHERE type = 'UsageCharged') AS charged
         FROM ledger_events WHERE stream_id = $1`,
        [`usage-${requestId}`],
      );
      const { pending, charged } = result.rows[0]!;
      if (pending !== null && charged !== null) return { pending, charged };
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error(`${requestId} was never charged`);
  }

  it("given a price raised through the admin API, then the next request is pended at its charge", async () => {
    await pendingAndCharge(await chat()); // the pricing of the day is in memory
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

    const { pending, charged } = await pendingAndCharge(await chat());

    expect(pending).toBe(charged);
  });

  it("given a price raised by another process, then a request once its NOTIFY has come is pended at its charge", async () => {
    await pendingAndCharge(await chat());
    // Appended as another process's command would: this process learns of it only by the NOTIFY.
    const eventId = randomUUID();
    await harness.service.ledger.store.append({
      streamId: modelPriceStreamIdOf(model),
      expectedVersion: "any",
      events: [
        {
          eventId,
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
    // The projections have applied it (read in SQL: a wait of this process would drop its pricing itself),
    // and their NOTIFY had a moment to reach this process.
    for (let attempt = 0; attempt < 200; attempt++) {
      const applied = await harness.service.ledger.pool.query(
        "SELECT 1 FROM projection_model_prices WHERE event_id = $1",
        [eventId],
      );
      if (applied.rowCount === 1) break;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    await new Promise((resolve) => setTimeout(resolve, 300));

    const { pending, charged } = await pendingAndCharge(await chat());

    expect(pending).toBe(charged);
  });
});
