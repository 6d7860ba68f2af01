import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { billingHistoryProjection } from "../../../projections/billing-history";
import { usageByDayProjection } from "../../../projections/usage-by-day";
import { compareLogPositions, parseLogPosition } from "../../../src/ledger/store/log-position";
import { fxRateUpdated, modelPriceSet } from "../../billing/billing-ledger-fixtures";
import { usageAt } from "../../billing/statements/statement-ledger";
import { type BillingApiHarness, chargeRecordedUsage, startBillingApi } from "../admin/billing-api-harness";

/**
 * The query parameters of the finance reads — statements, the finance export, the billing history and its
 * totals, usage by day — as finance types them: a parameter given twice, an instant with its Seoul offset
 * written as is in the URL. Given two charges on either side of Seoul's midnight of 1 February 2026.
 */

const user = { kind: "user", id: "finance-queries" } as const;
const keyId = "0b7d0c9e-4444-4a4a-8b8b-000000000004";
let api: BillingApiHarness;
let session = "";

const charges = [
  // 2026-01-31 23:59:59.999 KST: January.
  { requestId: "fq-january", startedAt: "2026-01-31T14:59:59.999Z" },
  // 2026-02-01 00:00:00 KST: February, though still 31 January in UTC.
  { requestId: "fq-february", startedAt: "2026-01-31T15:00:00.000Z" },
];

beforeAll(async () => {
  api = await startBillingApi("finance_query_parameters");
  const settingsAt = "2025-12-31T15:00:00.000Z";
  await api.ledger.append(
    modelPriceSet("alpha-5.4", { input: "1.25", cachedInput: "0.125", output: "10" }, settingsAt),
    fxRateUpdated({ appliesOn: "2026-01-01", rateDate: "2025-12-31", rateKrwPerUsd: "1391.7" }, settingsAt),
    ...charges.map((charge) =>
      usageAt({
        ...charge,
        account: user,
        keyId,
        model: "alpha-5.4",
        tokens: { input: 1_000, cached: 0, output: 100, reasoning: 0 },
      }),
    ),
  );
  let last = parseLogPosition("0-0");
  for (const { requestId } of charges) {
    await chargeRecordedUsage(api, requestId);
    for (const event of await api.ledger.store.readStream(`usage-${requestId}`))
      if (compareLogPositions(event.position, last) > 0) last = event.position;
  }
  await api.waiter.waitFor(last, [billingHistoryProjection.name, usageByDayProjection.name], 10_000);
  session = await api.session(user.id, null);
}, 60_000);

afterAll(async () => {
  await api?.close();
});

function asSession(path: string): Promise<Response> {
  return fetch(`${api.url}${path}`, { headers: { authorization: `Bearer ${session}` } });
}

async function errorOf(
  response: Response,
): Promise<{ httpStatus: number; status: unknown; message: unknown }> {
  const body = (await response.json()) as { status: unknown; message: unknown };
  return { httpStatus: response.status, status: body.status, message: body.message };
}

describe("a parameter given twice", () => {
  it.each([
    ["admin", "/statements/user/finance-queries?month=2026-01&month=2026-02", "month"],
    ["admin", "/statements/user/finance-queries?month=2026-01&format=csv&format=json", "format"],
    ["admin", "/exports/charges?month=2026-01&month=2026-02", "month"],
    ["admin", "/billing?account=user:finance-queries&from=2026-01-01&from=2026-01-02", "from"],
    ["admin", "/billing/totals?account=user:finance-queries&groupBy=day&groupBy=model", "groupBy"],
    ["session", "/llm/statements?month=2026-01&month=2026-02", "month"],
    ["session", "/llm/billing?to=2026-02-01&to=2026-03-01", "to"],
    ["session", "/llm/billing?limit=10&cursor=a&cursor=b", "cursor"],
    ["session", "/llm/billing/totals?groupBy=day&from=2026-01-01&from=2026-01-02", "from"],
    ["session", "/llm/usage?from=2026-01-01&from=2026-01-02", "from"],
  ])("is refused with 400/100 saying so (%s %s)", async (caller, path, parameter) => {
    // When
    const response = caller === "admin" ? await api.admin("GET", path) : await asSession(path);

    // Then
    expect(await errorOf(response)).toEqual({
      httpStatus: 400,
      status: 100,
      message: `${parameter}: given 2 times; give it once`,
    });
  });
});

describe("an instant with its Seoul offset typed as is in the URL", () => {
  // A `+` in a query decodes to a space: `…T00:00:00+09:00` arrives as `…T00:00:00 09:00`.
  const seoulFebruaryFirst = "2026-02-01T00:00:00+09:00";

  it("is the instant it names, in the billing totals, as when its + is percent-encoded", async () => {
    // When
    const typed = await asSession(`/llm/billing/totals?groupBy=day&from=${seoulFebruaryFirst}`);
    const encoded = await asSession(
      `/llm/billing/totals?groupBy=day&from=${encodeURIComponent(seoulFebruaryFirst)}`,
    );

    // Then
    expect(typed.status, await typed.clone().text()).toBe(200);
    const totals = await typed.json();
    expect(totals).toMatchObject({
      from: "2026-01-31T15:00:00.000Z",
      totals: [{ group: "2026-02-01", charges: 1 }],
      charges: 1,
    });
    expect(totals).toEqual(await encoded.json());
  });

  it("is the instant it names, as the end of the admin's billing history", async () => {
    // When
    const response = await api.admin(
      "GET",
      `/billing?account=user:${user.id}&from=2026-01-31T00:00:00+09:00&to=${seoulFebruaryFirst}`,
    );

    // Then
    expect(response.status, await response.clone().text()).toBe(200);
    const history = (await response.json()) as { from: string; to: string; data: { requestId: string }[] };
    expect(history).toMatchObject({ from: "2026-01-30T15:00:00.000Z", to: "2026-01-31T15:00:00.000Z" });
    expect(history.data.map((charge) => charge.requestId)).toEqual(["fq-january"]);
  });
});

describe("paging the admin's billing CSV", () => {
  it.each([
    ["limit", "limit=1"],
    ["cursor", "cursor=abc"],
    ["order", "order=newest"],
  ])(
    "is refused with 400/100 rather than answered whole as if %s were not there",
    async (parameter, paging) => {
      // When
      const response = await api.admin("GET", `/billing?account=user:${user.id}&format=csv&${paging}`);

      // Then
      expect(await errorOf(response)).toEqual({
        httpStatus: 400,
        status: 100,
        message: `${parameter}: pages the JSON answer; format=csv is the whole range, oldest first`,
      });
    },
  );
});

describe("a Seoul date the ranges do not take", () => {
  it.each([
    ["/llm/billing?from=0001-01-01", "from", "or an ISO 8601 instant with offset"],
    ["/llm/billing/totals?groupBy=day&to=1900-01-01", "to", "or an ISO 8601 instant with offset"],
    ["/llm/usage?from=1908-03-31", "from", ""],
  ])("is refused with the bound it is outside, not as no date (%s)", async (path, parameter, orInstant) => {
    // When
    const response = await asSession(path);

    // Then
    expect(await errorOf(response)).toEqual({
      httpStatus: 400,
      status: 100,
      message: `${parameter}: must be a date "YYYY-MM-DD" from 1970-01-01 (a Seoul day)${orInstant ? ` ${orInstant}` : ""}`,
    });
  });

  it("is no bound on an instant: the years 1 to 9999 stay open", async () => {
    const response = await asSession("/llm/billing/totals?groupBy=day&from=0001-01-01T00:00:00Z");
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ from: "0001-01-01T00:00:00.000Z", charges: 2 });
  });
});
