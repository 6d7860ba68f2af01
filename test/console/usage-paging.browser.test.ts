import { readFile } from "node:fs/promises";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { formatChargeWon, sumWon } from "../../console/src/lib/format";
import { type GatewayHarness, startGatewayHarness, testSecrets } from "../support/gateway-harness";
import { type Browser, launchBrowser, screenshot, seriousAccessibilityViolations } from "./support/browser";
import { patienceMs, poll } from "./support/patient";
import { appendCharges, type SeededCharge } from "./support/seeded-charges";

/**
 * The usage page on a month of 5,000 charges: totals and charts from the usage-by-day read model, the
 * charges table a page of 50 at a time, newest first, walked to the last page and back, every charge seen
 * once; no request for the whole month; the CSV export still holds every charge.
 */

const userId = "pager";
const chargeCount = 5_000;
const pageRows = 50;

let harness: GatewayHarness;
let browser: Browser;
let page: Page;
let charges: SeededCharge[] = [];
const billingRequests: string[] = [];

beforeAll(async () => {
  harness = await startGatewayHarness({
    label: "console_usage_paging",
    billing: {},
    service: { adminToken: testSecrets.adminToken },
  });
  const sessionToken = await harness.session(userId);
  const key = await harness.issueKey(sessionToken, { name: "paging key" });
  // Given 5,000 charges, one every 5 minutes back from a minute ago: 17 days, inside the default 30.
  charges = await appendCharges(harness, {
    account: { kind: "user", id: userId },
    keyId: key.uuid,
    count: chargeCount,
    newestStartMs: Date.now() - 60_000,
    spacingMs: 5 * 60_000,
  });
  browser = await launchBrowser({ locale: "en-US", origin: harness.url });
  page = browser.page;
  page.setDefaultTimeout(patienceMs);
  page.on("request", (request) => {
    if (new URL(request.url()).pathname === "/llm/billing") billingRequests.push(request.url());
  });
  await page.goto(`${harness.url}/console/`);
  await page.getByLabel("Session token").fill(sessionToken);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByTestId("personal-balance").waitFor();
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await harness?.close();
});

const rowIds = () => page.getByTestId("charge-row").locator("code").allTextContents();

describe("the usage page on a 5,000-charge month", { timeout: 180_000 }, () => {
  it("shows the month's totals from the read model and the newest 50 charges first", async () => {
    await page.getByRole("link", { name: "Usage & charges" }).click();
    await poll(() => page.getByTestId("charge-row").count()).toBe(pageRows);
    await poll(() => page.getByTestId("usage-total-requests").textContent()).toBe("5,000");
    expect(await page.getByTestId("usage-total-won").textContent()).toBe(
      formatChargeWon(sumWon(charges.map((charge) => charge.amountWon))),
    );
    expect(await rowIds()).toEqual(charges.slice(0, pageRows).map((charge) => charge.requestId));
    expect(await page.getByTestId("charges-position").textContent()).toBe("1–50 / 5,000");
    // The row's amount has the total's precision; the exact micro-won is in its breakdown.
    const firstRow = page.getByTestId("charge-row").first();
    expect(await firstRow.locator("td").nth(4).textContent()).toBe(formatChargeWon(charges[0]!.amountWon));
    expect(await firstRow.locator("dl").textContent()).toContain(`₩${charges[0]!.amountWon}`);
    await screenshot(page, "usage-paging-first-page");
    expect(await seriousAccessibilityViolations(page)).toEqual([]);
  });

  it("labels the won chart's axis in round steps from ₩0", async () => {
    const labels = page
      .getByTestId("chart-won")
      .locator(".recharts-yAxis-tick-labels .recharts-cartesian-axis-tick-value");
    await poll(() => labels.count()).toBeGreaterThanOrEqual(3);
    const ticks = (await labels.allTextContents()).map((text) => Number(text.replace(/[₩,]/g, "")));
    expect(ticks[0]).toBe(0);
    const step = ticks[1]! - ticks[0]!;
    expect(ticks.every((tick, index) => Math.abs(tick - index * step) < 1e-9)).toBe(true);
    const magnitude = 10 ** Math.floor(Math.log10(step));
    expect([1, 2, 2.5, 5]).toContain(Number((step / magnitude).toPrecision(3)));
  });

  it("walks every page to the oldest charge and back, each charge once, never asking for the whole month", async () => {
    const seen: string[] = [];
    const older = page.getByRole("button", { name: "Older →" });
    for (let pageNumber = 1; pageNumber <= chargeCount / pageRows; pageNumber += 1) {
      const first = (pageNumber - 1) * pageRows + 1;
      await poll(() => page.getByTestId("charges-position").textContent()).toBe(
        `${first.toLocaleString("en-US")}–${(first + pageRows - 1).toLocaleString("en-US")} / 5,000`,
      );
      await poll(async () => (await rowIds())[0]).toBe(charges[first - 1]!.requestId);
      seen.push(...(await rowIds()));
      if (pageNumber < chargeCount / pageRows) await older.click();
    }
    expect(seen).toEqual(charges.map((charge) => charge.requestId));
    expect(await older.isDisabled()).toBe(true);

    await page.getByRole("button", { name: "← Newer" }).click();
    await poll(() => page.getByTestId("charges-position").textContent()).toBe("4,901–4,950 / 5,000");
    expect(await rowIds()).toEqual(charges.slice(4_900, 4_950).map((charge) => charge.requestId));

    // Every request for charges asked for one page of 50.
    expect(billingRequests.length).toBeGreaterThanOrEqual(chargeCount / pageRows);
    for (const url of billingRequests) expect(new URL(url).searchParams.get("limit"), url).toBe("50");
  });

  it("exports the whole range as CSV, read a page at a time", async () => {
    billingRequests.length = 0;
    const [download] = await Promise.all([
      page.waitForEvent("download"),
      page.getByRole("button", { name: "Download CSV" }).click(),
    ]);
    const lines = (await readFile((await download.path())!, "utf8")).trim().split("\r\n");
    expect(lines).toHaveLength(chargeCount + 1);
    expect(lines[1]).toContain(charges[chargeCount - 1]!.requestId);
    expect(lines[chargeCount]).toContain(charges[0]!.requestId);
    expect(billingRequests).toHaveLength(5);
    for (const url of billingRequests) expect(new URL(url).searchParams.get("limit")).toBe("1000");
  });

  it("given an older page the gateway fails to read, then the error is said and Newer goes back to the page before", async () => {
    const olderPages = (url: URL) => url.pathname === "/llm/billing" && url.searchParams.has("cursor");
    await page.route(olderPages, (route) =>
      route.fulfill({ status: 503, json: { status: 300, message: "The ledger is unavailable" } }),
    );
    // A fresh page: nothing but the first page of charges is read yet.
    await page.goto(`${harness.url}/console/usage`);
    await poll(() => page.getByTestId("charges-position").textContent()).toBe("1–50 / 5,000");

    await page.getByRole("button", { name: "Older →" }).click();

    await page.getByRole("alert").getByText("The ledger is unavailable", { exact: false }).waitFor();
    await page.unroute(olderPages);
    await page.getByRole("button", { name: "← Newer" }).click();
    await poll(() => page.getByTestId("charges-position").textContent()).toBe("1–50 / 5,000");
    expect(await rowIds()).toEqual(charges.slice(0, pageRows).map((charge) => charge.requestId));
  });
});
