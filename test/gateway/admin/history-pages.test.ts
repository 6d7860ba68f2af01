import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { encodePositionCursor } from "../../../src/kernel/position-cursor";
import { appendDiscountScopes } from "../../support/discount-scopes";
import { type GatewayHarness, startGatewayHarness, testSecrets } from "../../support/gateway-harness";
import { eventually } from "../../workers/queue-test-support";

/**
 * The price, discount and FX histories a page at a time: however many changes there are, reading every page
 * gives each once, newest first, and a change made while they are read shifts none of the pages after it
 * (it sorts among the pages read, so the next read from the first page shows it).
 */

let harness: GatewayHarness;
const admin = (path: string, init: { method?: string; body?: unknown } = {}) =>
  fetch(`${harness.url}/admin${path}`, {
    method: init.method ?? "GET",
    headers: { authorization: `Bearer ${testSecrets.adminToken}`, "content-type": "application/json" },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  });

interface Page<Row> {
  data: Row[];
  nextCursor: string | null;
}

/** Every page of `path` (a path with a query), `between` called once after the first page. */
async function readEveryPage<Row>(
  path: string,
  between: () => Promise<void> = async () => {},
): Promise<Row[][]> {
  const pages: Row[][] = [];
  let cursor: string | null = null;
  for (let pagesRead = 0; pagesRead < 2_000; pagesRead += 1) {
    const response = await admin(`${path}${cursor === null ? "" : `&cursor=${cursor}`}`);
    expect(response.status, await response.clone().text()).toBe(200);
    const page = (await response.json()) as Page<Row>;
    pages.push(page.data);
    if (page.nextCursor === null) return pages;
    expect(page.data.length).toBeGreaterThan(0);
    if (pagesRead === 0) await between();
    cursor = page.nextCursor;
  }
  throw new Error(`${path}: more than 2,000 pages`);
}

/**
 * 400/100 with the message every paged list gives a cursor no page gave; one longer than any cursor is
 * refused by its length, as theirs is.
 */
async function expectCursorRefused(path: string, cursor: string) {
  const response = await admin(`${path}${path.includes("?") ? "&" : "?"}cursor=${cursor}`);
  const body = (await response.json()) as { status: number; message: string };
  expect({ cursor, status: response.status, code: body.status }).toEqual({ cursor, status: 400, code: 100 });
  expect(body.message).toBe(
    cursor.length > 1_000
      ? "cursor: Too big: expected string to have <=1000 characters"
      : "cursor: must be a nextCursor returned by a previous page",
  );
}

/** Cursors no page gave: not base64url JSON, the wrong shape, an account's, a far too long one. */
const malformedCursors = [
  "not-a-cursor",
  "%25%25",
  Buffer.from("[1,2]").toString("base64url"),
  Buffer.from(JSON.stringify(["2026-01-01T00:00:00.000Z", "x-y"])).toString("base64url"),
  Buffer.from(JSON.stringify(["2026-13-01T00:00:00.000Z", "1-1"])).toString("base64url"),
  encodePositionCursor(
    { startedAt: "2026-01-01T00:00:00.000Z", requestId: randomUUID() },
    { account: "AAAAAAAAAAAAAAAA" },
  ),
  "a".repeat(1_001),
];

beforeAll(async () => {
  harness = await startGatewayHarness({
    label: "history_pages",
    billing: {},
    service: { adminToken: testSecrets.adminToken },
  });
}, 60_000);
afterAll(async () => {
  await harness?.close();
});

interface PriceChange {
  eventId: string;
  model: string;
  inputUsdPer1M: string;
  effectiveAt: string;
}

describe("GET /admin/prices/history, a page at a time", () => {
  it("given more changes than a page, then every page read gives each once, newest first, a change made between pages shifting nothing", async () => {
    // Given: nine changes of one model after its seed
    const setPrice = async (input: string) =>
      expect(
        (
          await admin("/models/alpha-5.4/price", {
            method: "PUT",
            body: { inputUsdPer1M: input, outputUsdPer1M: "8" },
          })
        ).status,
      ).toBe(200);
    for (let change = 1; change <= 9; change += 1) await setPrice(String(change));
    const before = (await (
      await admin("/prices/history?model=alpha-5.4&limit=1000")
    ).json()) as Page<PriceChange>;
    expect(before.data).toHaveLength(10);
    expect(before.nextCursor).toBeNull();

    // When: read three at a time, a new price set after the first page
    const pages = await readEveryPage<PriceChange>("/prices/history?model=alpha-5.4&limit=3", () =>
      setPrice("10"),
    );

    // Then
    expect(pages.map((page) => page.length)).toEqual([3, 3, 3, 1]);
    expect(pages.flat().map((change) => change.eventId)).toEqual(before.data.map((change) => change.eventId));
    const after = (await (
      await admin("/prices/history?model=alpha-5.4&limit=1")
    ).json()) as Page<PriceChange>;
    expect(after.data[0]?.inputUsdPer1M).toBe("10");
  });

  it("given every model's changes, then the pages of all of them are the whole list, newest first", async () => {
    const whole = (await (await admin("/prices/history?limit=1000")).json()) as Page<PriceChange>;
    expect(whole.data.length).toBeGreaterThan(20);
    const pages = await readEveryPage<PriceChange>("/prices/history?limit=7");
    expect(pages.flat().map((change) => change.eventId)).toEqual(whole.data.map((change) => change.eventId));
  });

  it("refuses a cursor no page gave with 400/100, never 500", async () => {
    for (const cursor of malformedCursors) await expectCursorRefused("/prices/history", cursor);
  });
});

interface DiscountChange {
  eventId: string;
  model: string | null;
  organizationId: string | null;
  rate: string | null;
}

describe("GET /admin/discounts/history, a page at a time", () => {
  it("given more changes than a page in several scopes, then every page read gives each once, newest first, a change made between pages shifting nothing", async () => {
    // Given: eight changes in three scopes
    const setDiscount = async (organizationId: string, rate: string) =>
      expect(
        (await admin("/discounts", { method: "PUT", body: { model: null, organizationId, rate } })).status,
      ).toBe(200);
    for (let change = 1; change <= 8; change += 1) {
      await setDiscount(`paged-${change % 3}`, `0.0${change}`);
    }
    const before = (await (await admin("/discounts/history?limit=1000")).json()) as Page<DiscountChange>;
    expect(before.data.map((change) => change.rate)).toEqual([
      "0.08",
      "0.07",
      "0.06",
      "0.05",
      "0.04",
      "0.03",
      "0.02",
      "0.01",
    ]);

    // When: read three at a time, a rule changed after the first page
    const pages = await readEveryPage<DiscountChange>("/discounts/history?limit=3", () =>
      setDiscount("paged-1", "0.09"),
    );

    // Then
    expect(pages.map((page) => page.length)).toEqual([3, 3, 2]);
    expect(pages.flat().map((change) => change.eventId)).toEqual(before.data.map((change) => change.eventId));
  });

  it("given more scopes than one answer reads (1,000), then the pages reach the change of every scope", async () => {
    // Given: 1,001 organization scopes, each with one rule, after every change the test before made
    const scopesCount = 1_001;
    const changedFirstAt = Date.now() + 10;
    const organizationIdOf = (index: number) => `many-${String(index).padStart(4, "0")}`;
    await appendDiscountScopes(harness.service.ledger.store, {
      count: scopesCount,
      firstAt: changedFirstAt,
      organizationIdOf,
    });
    await eventually("the discounts projection holds every scope", async () => {
      const { data } = (await (await admin("/discounts")).json()) as { data: DiscountChange[] };
      return data.filter((rule) => rule.organizationId?.startsWith("many-")).length === scopesCount;
    });

    // When
    const pages = await readEveryPage<DiscountChange>("/discounts/history?limit=1000");

    // Then: the 1,001 new rules, newest first, then the nine changes before them
    const organizations = pages.flat().map((change) => change.organizationId);
    expect(organizations.slice(0, scopesCount)).toEqual(
      Array.from({ length: scopesCount }, (_unused, index) => organizationIdOf(scopesCount - 1 - index)),
    );
    expect(organizations.slice(scopesCount)).toHaveLength(9);
    expect(new Set(pages.flat().map((change) => change.eventId)).size).toBe(scopesCount + 9);
  }, 60_000);

  it("refuses a cursor no page gave with 400/100, never 500", async () => {
    for (const cursor of malformedCursors) await expectCursorRefused("/discounts/history", cursor);
  });
});

interface FxRate {
  appliesOn: string;
  rate: string;
  recordedAt: string;
}

describe("GET /admin/fx-rates, a page at a time", () => {
  it("given more rates than a page, some for one day, then every page read gives each once, newest first, a rate recorded between pages shifting nothing", async () => {
    // Given: two rates for each of three days, besides the first start's default (for today)
    const recordRate = async (appliesOn: string, rate: string) => {
      const response = await admin("/fx-rates", { method: "POST", body: { appliesOn, rate } });
      expect(response.status, await response.clone().text()).toBe(201);
    };
    for (const day of ["2026-03-01", "2026-03-02", "2026-03-03"]) {
      await recordRate(day, `1${day.slice(-2)}1`);
      await recordRate(day, `1${day.slice(-2)}2`);
    }
    const before = (await (await admin("/fx-rates")).json()) as Page<FxRate> & {
      bankSourceConfigured: boolean;
    };
    expect(before.nextCursor).toBeNull();
    expect(typeof before.bankSourceConfigured).toBe("boolean");
    const march = before.data.filter((rate) => rate.appliesOn.startsWith("2026-03"));
    expect(march.map((rate) => rate.rate)).toEqual(["1032", "1031", "1022", "1021", "1012", "1011"]);

    // When: read three at a time, a rate for a day later than the first page's recorded after it
    const pages = await readEveryPage<FxRate>("/fx-rates?limit=3", () => recordRate("2026-03-04", "1041"));

    // Then
    expect(pages.flat()).toEqual(before.data);
    expect(pages[0]).toHaveLength(3);
  });

  it("refuses a cursor no page gave with 400/100, never 500, as a price history's cursor", async () => {
    const prices = (await (await admin("/prices/history?limit=1")).json()) as Page<PriceChange>;
    expect(prices.nextCursor).not.toBeNull();
    for (const cursor of [...malformedCursors, prices.nextCursor ?? ""])
      await expectCursorRefused("/fx-rates", cursor);
    const rates = (await (await admin("/fx-rates?limit=1")).json()) as Page<FxRate>;
    expect(rates.nextCursor).not.toBeNull();
    await expectCursorRefused("/prices/history", rates.nextCursor ?? "");
    await expectCursorRefused("/discounts/history", rates.nextCursor ?? "");
  });
});
