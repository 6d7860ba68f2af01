import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { modelPriceStreamIdOf } from "../../../src/billing/commands/set-model-price";
import { isCanonicalMoney } from "../../../src/kernel/money";
import { appendDiscountScopes } from "../../support/discount-scopes";
import { type GatewayHarness, startGatewayHarness, testSecrets } from "../../support/gateway-harness";
import { eventually } from "../../workers/queue-test-support";

/**
 * Price and discount history for the console: every change read back from the ledger with who made it,
 * when, and the request that made it, newest first.
 */

let harness: GatewayHarness;
const admin = (path: string, init: { method?: string; body?: unknown } = {}) =>
  fetch(`${harness.url}/admin${path}`, {
    method: init.method ?? "GET",
    headers: { authorization: `Bearer ${testSecrets.adminToken}`, "content-type": "application/json" },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  });

interface PriceChange {
  model: string;
  inputUsdPer1M: string;
  outputUsdPer1M: string;
  cachedInputUsdPer1M: string;
  actor: string;
  correlationId: string | null;
  effectiveAt: string;
}
interface DiscountChange {
  model: string | null;
  organizationId: string | null;
  rate: string;
  actor: string;
  correlationId: string | null;
  effectiveAt: string;
}

beforeAll(async () => {
  harness = await startGatewayHarness({
    label: "pricing_history",
    billing: {},
    service: { adminToken: testSecrets.adminToken },
  });
}, 60_000);
afterAll(async () => {
  await harness?.close();
});

describe("GET /admin/prices/history", () => {
  it("given the seed and two admin changes of a model, then lists the three newest first with their authors", async () => {
    const requestIds: (string | null)[] = [];
    for (const input of ["1.5", "2.25"]) {
      const response = await admin("/models/alpha-5.4/price", {
        method: "PUT",
        body: { inputUsdPer1M: input, outputUsdPer1M: "8" },
      });
      expect(response.status).toBe(200);
      requestIds.push(response.headers.get("x-request-id"));
    }
    expect(requestIds.every((requestId) => requestId !== null)).toBe(true);
    const response = await admin("/prices/history?model=alpha-5.4");
    expect(response.status).toBe(200);
    const { data } = (await response.json()) as { data: PriceChange[] };
    expect(data.map((change) => [change.inputUsdPer1M, change.actor, change.correlationId])).toEqual([
      ["2.25", "admin", requestIds[1]],
      ["1.5", "admin", requestIds[0]],
      [expect.any(String), expect.stringMatching(/^system:/), null],
    ]);
    expect(data[0]).toMatchObject({ model: "alpha-5.4", outputUsdPer1M: "8", cachedInputUsdPer1M: "2.25" });
    expect(data[0]!.effectiveAt >= data[1]!.effectiveAt).toBe(true);
    // The newest change is the price in force.
    const prices = (await (await admin("/prices")).json()) as { data: PriceChange[] };
    expect(prices.data.find((price) => price.model === "alpha-5.4")?.inputUsdPer1M).toBe("2.25");
  });

  it("given a model the catalog no longer lists, then its price history is still read, alone or with every model's", async () => {
    // Priced while a models file listed it; that file has since dropped it.
    const retired = "retired-model-7";
    await harness.service.ledger.store.append({
      streamId: modelPriceStreamIdOf(retired),
      expectedVersion: "no-stream",
      events: [
        {
          eventId: randomUUID(),
          event: {
            type: "ModelPriceSet",
            data: {
              model: retired,
              inputUsdPerMillionTokens: "3",
              outputUsdPerMillionTokens: "9",
              cachedInputUsdPerMillionTokens: "0.3",
            },
            metadata: { actor: "admin", occurredAt: new Date().toISOString() },
          },
        },
      ],
    });
    const historyOf = async (query: string) => {
      const response = await admin(`/prices/history?${query}`);
      return { status: response.status, data: ((await response.json()) as { data?: PriceChange[] }).data };
    };
    await eventually(
      "the retired model's price is projected",
      async () => (await historyOf(`model=${retired}`)).status === 200,
    );

    expect((await historyOf(`model=${retired}`)).data).toEqual([
      expect.objectContaining({ model: retired, inputUsdPer1M: "3", outputUsdPer1M: "9", actor: "admin" }),
    ]);
    expect((await historyOf("limit=1000")).data?.some((change) => change.model === retired)).toBe(true);
    expect((await historyOf("model=never-priced-model")).status).toBe(404);
  });

  it("given no model, then lists every model's changes, cut at limit", async () => {
    const all = (await (await admin("/prices/history?limit=1000")).json()) as { data: PriceChange[] };
    expect(new Set(all.data.map((change) => change.model)).size).toBeGreaterThan(1);
    const sorted = [...all.data].sort((left, right) => right.effectiveAt.localeCompare(left.effectiveAt));
    expect(all.data.map((change) => change.effectiveAt)).toEqual(sorted.map((change) => change.effectiveAt));
    const page = (await (await admin("/prices/history?limit=2")).json()) as { data: PriceChange[] };
    expect(page.data).toEqual(all.data.slice(0, 2));
  });

  it('shows every price in money\'s one form, a price an earlier release seeded as the catalog wrote it ("10.00") too', async () => {
    await harness.service.ledger.store.append({
      streamId: modelPriceStreamIdOf("delta-4.6-opus"),
      expectedVersion: "any",
      events: [
        {
          eventId: randomUUID(),
          event: {
            type: "ModelPriceSet",
            data: {
              model: "delta-4.6-opus",
              inputUsdPerMillionTokens: "5.00",
              outputUsdPerMillionTokens: "25.00",
              cachedInputUsdPerMillionTokens: "0.50",
            },
            metadata: { actor: "system:seed", occurredAt: new Date().toISOString() },
          },
        },
      ],
    });
    const history = (await (await admin("/prices/history?limit=1000")).json()) as { data: PriceChange[] };
    expect(history.data.find((change) => change.model === "delta-4.6-opus")).toMatchObject({
      inputUsdPer1M: "5",
      outputUsdPer1M: "25",
      cachedInputUsdPer1M: "0.5",
    });
    const listed = async () =>
      ((await (await admin("/console/prices")).json()) as { data: PriceChange[] }).data;
    await eventually("the console lists the price appended", async () =>
      (await listed()).some((price) => price.model === "delta-4.6-opus" && price.outputUsdPer1M === "25"),
    );
    const prices = [...history.data, ...(await listed())].flatMap((price) => [
      price.inputUsdPer1M,
      price.outputUsdPer1M,
      price.cachedInputUsdPer1M,
    ]);
    expect(prices.filter((price) => !isCanonicalMoney(price))).toEqual([]);
  });

  it("answers 404/120 for an unknown model and 400/100 for a limit out of bounds", async () => {
    const unknown = await admin("/prices/history?model=nope");
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { status: number }).status).toBe(120);
    for (const query of ["limit=0", "limit=1001", "limit=ten"]) {
      const response = await admin(`/prices/history?${query}`);
      expect(response.status, query).toBe(400);
      const body = (await response.json()) as { status: number; message: string };
      expect(body.status).toBe(100);
      expect(body.message).toContain("limit");
    }
  });
});

describe("GET /admin/discounts/history", () => {
  it("given changes in two scopes, then lists all of them newest first, a replaced rule included", async () => {
    const rules = [
      { model: null, organizationId: "acme", rate: "0.1" },
      { model: "alpha-5.4", organizationId: null, rate: "0.2" },
      { model: null, organizationId: "acme", rate: "0" },
    ];
    for (const rule of rules) {
      expect((await admin("/discounts", { method: "PUT", body: rule })).status).toBe(200);
    }
    const response = await admin("/discounts/history");
    expect(response.status).toBe(200);
    const { data } = (await response.json()) as { data: DiscountChange[] };
    expect(data.map(({ model, organizationId, rate }) => ({ model, organizationId, rate }))).toEqual(
      [...rules].reverse(),
    );
    expect(data.every((change) => change.actor === "admin")).toBe(true);
    // Only the latest rule of the acme scope is in force; the history keeps the replaced one.
    const inForce = (await (await admin("/discounts")).json()) as { data: DiscountChange[] };
    expect(inForce.data.filter((rule) => rule.organizationId === "acme").map((rule) => rule.rate)).toEqual([
      "0",
    ]);
    const limited = (await (await admin("/discounts/history?limit=1")).json()) as { data: DiscountChange[] };
    expect(limited.data).toEqual(data.slice(0, 1));
  });

  it("given more scopes than it reads (1,000), then the newest change is listed, in a scope that sorts last", async () => {
    // Given: 1,001 organization scopes, each with one rule, the one sorting last changed last
    const scopesCount = 1_001;
    // After every change the tests before made; the last in force about a second from now.
    const changedFirstAt = Date.now() + 10;
    const organizationIdOf = (index: number) => `scoped-${String(index).padStart(4, "0")}`;
    await appendDiscountScopes(harness.service.ledger.store, {
      count: scopesCount,
      firstAt: changedFirstAt,
      organizationIdOf,
    });
    await eventually("the discounts projection holds every scope", async () => {
      const { data } = (await (await admin("/discounts")).json()) as { data: DiscountChange[] };
      return data.filter((rule) => rule.organizationId?.startsWith("scoped-")).length === scopesCount;
    });

    // When
    const response = await admin("/discounts/history?limit=2");

    // Then: the two newest changes, newest first
    const { data } = (await response.json()) as { data: DiscountChange[] };
    expect(data.map((change) => change.organizationId)).toEqual([
      organizationIdOf(scopesCount - 1),
      organizationIdOf(scopesCount - 2),
    ]);
  }, 60_000);

  it("refuses without the admin token", async () => {
    const response = await fetch(`${harness.url}/admin/discounts/history`);
    expect(response.status).toBe(401);
  });
});
