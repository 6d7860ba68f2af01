import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allProjections } from "../../../projections";
import { isCanonicalMoney } from "../../../src/kernel/money";
import { fxRateUpdated, usageRecorded } from "../../billing/billing-ledger-fixtures";
import { type BillingApiHarness, chargeRecordedUsage, startBillingApi } from "../admin/billing-api-harness";

/**
 * Money in one form on every API (docs/api.md, "Money"): the same amount reads the same string in a statement,
 * the balance, the billing history and its totals, the CSVs and the admin's account views —
 * a plain decimal with trailing zeros trimmed ("6296.299", never "6296.299000").
 */

let api: BillingApiHarness;
let token = "";
const userId = "hana";
const month = "2026-11";

beforeAll(async () => {
  api = await startBillingApi("money_one_form");
  await api.admin("PUT", "/models/alpha-5.4/price", { inputUsdPer1M: "3", outputUsdPer1M: "3" });
  await api.admin("POST", "/fx-rates", { appliesOn: "2026-11-20", rate: "1000" });
  // The first start's rate, as FX_USDKRW_DEFAULT gave it ("1391.70": the variable takes any decimal).
  await api.ledger.append(
    fxRateUpdated(
      { appliesOn: "2026-11-01", rateDate: "2026-11-01", rateKrwPerUsd: "1391.70", source: "default" },
      "2026-10-31T15:00:00.000Z",
    ),
  );
  await api.admin("POST", `/accounts/user/${userId}/credits`, { amountWon: "10000", reference: "test" });
  // 1,234,567 input tokens at $3 per million and ₩1,000 per dollar: ₩3,703.701, recorded as "3703.701000".
  await api.ledger.append(
    usageRecorded({
      requestId: "req_one_form",
      account: { kind: "user", id: userId },
      tokens: { input: 1_234_567, cached: 0, output: 0, reasoning: 0 },
      startedAt: "2026-11-20T02:00:00.000Z",
    }),
  );
  await chargeRecordedUsage(api, "req_one_form");
  token = await api.session(userId, null);
  // The balance holds the charge at its commit; the statement and the billing history once their projections
  // have applied it: wait until every one has.
  const charge = (await api.ledger.store.readStream("usage-req_one_form")).at(-1)!;
  await api.waiter.waitFor(
    charge.position,
    allProjections.map((projection) => projection.name),
    10_000,
  );
}, 60_000);

afterAll(async () => {
  await api?.close();
});

async function getJson(path: string): Promise<Record<string, unknown>> {
  const response = await fetch(`${api.url}${path}`, { headers: { authorization: `Bearer ${token}` } });
  expect(response.status, path).toBe(200);
  return (await response.json()) as Record<string, unknown>;
}

async function getAdminJson(path: string): Promise<Record<string, unknown>> {
  const response = await api.admin("GET", path);
  expect(response.status, path).toBe(200);
  return (await response.json()) as Record<string, unknown>;
}

/** Every string under a key that names won, anywhere in a body. */
function wonStrings(body: unknown, path = ""): [string, string][] {
  if (Array.isArray(body)) return body.flatMap((item, index) => wonStrings(item, `${path}[${index}]`));
  if (body === null || typeof body !== "object") return [];
  return Object.entries(body).flatMap(([key, value]): [string, string][] =>
    typeof value === "string" && /Won$/.test(key)
      ? [[`${path}.${key}`, value]]
      : wonStrings(value, `${path}.${key}`),
  );
}

function expectOneForm(body: unknown): void {
  const amounts = wonStrings(body);
  expect(amounts.length).toBeGreaterThan(0);
  for (const [where, amount] of amounts) expect(isCanonicalMoney(amount), `${where}: ${amount}`).toBe(true);
}

describe("money reads the same on every API", () => {
  it("the statement's closing balance is the balance API's string, and its charge the billing's", async () => {
    const balance = (await getJson("/llm/balance")) as { user: { balanceWon: string } };
    const statement = await getJson(`/llm/statements?account=personal&month=${month}`);
    const billing = (await getJson("/llm/billing")) as { data: { amountWon: string }[] };

    expect(balance.user.balanceWon).toBe("6296.299");
    expect(statement).toMatchObject({
      openingBalanceWon: "0",
      topUpsWon: "10000",
      chargesWon: "3703.701",
      correctionsWon: "0",
      closingBalanceWon: balance.user.balanceWon,
      chargesByModel: [{ model: "alpha-5.4", requests: 1, amountWon: "3703.701" }],
    });
    expect(billing.data[0]).toMatchObject({ amountWon: "3703.701", breakdown: { amountWon: "3703.701" } });
    for (const body of [balance, statement, billing]) expectOneForm(body);
  });

  it("totals and the admin's views say it the same way", async () => {
    const bodies = [
      await getJson("/llm/billing/totals?groupBy=model"),
      await getAdminJson(`/accounts/user/${userId}`),
      await getAdminJson("/accounts"),
      await getAdminJson(`/billing?account=user:${userId}`),
      await getAdminJson(`/statements/user/${userId}?month=${month}`),
    ];
    for (const body of bodies) expectOneForm(body);
    expect(JSON.stringify(bodies)).toContain('"3703.701"');
    expect(JSON.stringify(bodies)).toContain('"6296.299"');
    expect(JSON.stringify(bodies)).not.toMatch(/"-?\d+\.\d*0"/);
  });

  it("the price, discount and FX histories give prices and rates in that form too, as charges' breakdowns do", async () => {
    await api.admin("PUT", "/discounts", { model: null, organizationId: null, rate: "0.10" });
    const fxRates = (await getAdminJson("/fx-rates")) as { data: { appliesOn: string; rate: string }[] };
    expect(fxRates.data.map((entry) => [entry.appliesOn, entry.rate])).toEqual([
      ["2026-11-20", "1000"],
      ["2026-11-01", "1391.7"],
    ]);
    const prices = (await getAdminJson("/prices/history?model=alpha-5.4")) as {
      data: Record<string, string>[];
    };
    const discounts = (await getAdminJson("/discounts/history")) as { data: { rate: string }[] };
    for (const price of prices.data)
      for (const field of ["inputUsdPer1M", "cachedInputUsdPer1M", "outputUsdPer1M"])
        expect(isCanonicalMoney(price[field]!), `${field}: ${price[field]}`).toBe(true);
    expect(discounts.data.map((change) => change.rate)).toEqual(["0.1"]);
  });

  it("the statement's CSV carries the JSON's strings", async () => {
    const response = await fetch(`${api.url}/llm/statements?account=personal&month=${month}&format=csv`, {
      headers: { authorization: `Bearer ${token}` },
    });
    const csv = await response.text();
    expect(csv).toContain("summary,charges,,,1,3703.701\r\n");
    expect(csv).toContain("summary,closing_balance,");
    expect(csv).toMatch(/summary,closing_balance,[^,]*,,,6296\.299\r\n/);
    expect(csv).not.toMatch(/\d\.\d*0\r\n/);
  });
});
