import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GatewayHarness, startGatewayHarness, testSecrets } from "../../support/gateway-harness";

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

  it("given no model, then lists every model's changes, cut at limit", async () => {
    const all = (await (await admin("/prices/history?limit=1000")).json()) as { data: PriceChange[] };
    expect(new Set(all.data.map((change) => change.model)).size).toBeGreaterThan(1);
    const sorted = [...all.data].sort((left, right) => right.effectiveAt.localeCompare(left.effectiveAt));
    expect(all.data.map((change) => change.effectiveAt)).toEqual(sorted.map((change) => change.effectiveAt));
    const page = (await (await admin("/prices/history?limit=2")).json()) as { data: PriceChange[] };
    expect(page.data).toEqual(all.data.slice(0, 2));
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

  it("refuses without the admin token", async () => {
    const response = await fetch(`${harness.url}/admin/discounts/history`);
    expect(response.status).toBe(401);
  });
});
