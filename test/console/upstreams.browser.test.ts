import OpenAI from "openai";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EndpointHealth } from "../../src/gateway/generation/upstream-registry";
import { type GatewayHarness, startGatewayHarness, testSecrets } from "../support/gateway-harness";
import { type Browser, launchBrowser, screenshot, seriousAccessibilityViolations } from "./support/browser";
import { patienceMs, poll } from "./support/patient";

/**
 * The admin's Upstreams page in a real browser against the real gateway: every endpoint of
 * GET /admin/upstreams with its breaker, its requests in flight and its window's failures; no URL; the page
 * follows a breaker opening without a reload; it fits a phone in Korean.
 */

const userId = "joon";
const model = "alpha-5.4-mini";
const phone = { width: 390, height: 844 };

let harness: GatewayHarness;
let browser: Browser;
let page: Page;
let apiKey = "";

async function upstreamHealth(): Promise<EndpointHealth[]> {
  const response = await fetch(`${harness.url}/admin/upstreams`, {
    headers: { authorization: `Bearer ${testSecrets.adminToken}` },
  });
  expect(response.status).toBe(200);
  return ((await response.json()) as { data: EndpointHealth[] }).data;
}

async function failedRequest(): Promise<void> {
  harness.simulator.setFault({ kind: "status", status: 500, message: "upstream exploded" });
  try {
    await harness
      .openai(apiKey, { maxRetries: 0 })
      .chat.completions.create({ model, messages: [{ role: "user", content: "Hello" }] })
      .then(
        () => expect.fail("the request was expected to fail upstream"),
        (error: unknown) => expect(error).toBeInstanceOf(OpenAI.APIError),
      );
  } finally {
    harness.simulator.setFault(undefined);
  }
}

const rowOf = ({ endpoint, model }: Pick<EndpointHealth, "endpoint" | "model">) =>
  page.locator(`[data-testid="upstream-row"][data-endpoint="${endpoint}"][data-model="${model}"]`);

beforeAll(async () => {
  harness = await startGatewayHarness({
    label: "console_upstreams",
    billing: {},
    service: {
      adminToken: testSecrets.adminToken,
      // The default attempts, and a breaker that judges by three requests, over a window and an open period
      // that outlast the test: a served and a failed request leave it closed at 50%, one more failed request
      // opens it. Each failed request takes its retries' 3.5-7 s, and the browser's start and the first test
      // come between: the default 30 s window could let the served request age out on a slow machine.
      upstreamResilience: {
        limits: {
          breakerRequestsMin: 3,
          breakerFailureRateMin: 0.5,
          breakerWindowMs: 600_000,
          breakerOpenMs: 600_000,
        },
      },
    },
  });
  await harness.topUp({ kind: "user", id: userId }, "1000");
  const sessionToken = await harness.session(userId);
  apiKey = (await harness.issueKey(sessionToken, { name: "upstreams key" })).key;
  // Given one served and one failed generation request.
  await harness
    .openai(apiKey)
    .chat.completions.create({ model, messages: [{ role: "user", content: "Tell me about the sea" }] });
  await failedRequest();

  browser = await launchBrowser({ locale: "en-US", origin: harness.url });
  page = browser.page;
  page.setDefaultTimeout(patienceMs);
  await page.goto(`${harness.url}/console/admin/upstreams`);
  await page.getByLabel("Admin token").fill(testSecrets.adminToken);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByTestId("upstreams-table").waitFor();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await harness?.close();
});

describe("the admin's Upstreams page in Chromium", { timeout: 120_000 }, () => {
  it("lists every endpoint of GET /admin/upstreams with its breaker and window, and no URL", async () => {
    const endpoints = await upstreamHealth();
    const used = endpoints.find((endpoint) => endpoint.model === model)!;
    expect(used).toMatchObject({ breakerState: "closed", recentRequests: 2, recentFailedRequests: 1 });

    await page.getByRole("link", { name: "Upstreams" }).waitFor();
    expect(await page.getByRole("link", { name: "Upstreams" }).getAttribute("aria-current")).toBe("page");
    await poll(() => page.getByTestId("upstream-row").count()).toBe(endpoints.length);
    for (const endpoint of endpoints) {
      const row = rowOf(endpoint);
      expect(await row.getByTestId("breaker-state").getAttribute("data-state"), endpoint.endpoint).toBe(
        endpoint.breakerState,
      );
      expect(await row.textContent()).toContain(endpoint.model);
    }
    const usedRow = rowOf(used);
    expect(await usedRow.getByTestId("breaker-state").textContent()).toBe("closed · taking traffic");
    const cells = await usedRow.locator("td").allTextContents();
    // Model, breaker, in flight / capacity, requests, failed requests, failure rate.
    expect(cells.slice(2)).toEqual(["0 / no limit", "2", "1", "50%"]);

    const text = (await page.locator("main").textContent()) ?? "";
    expect(text).toContain("this gateway process");
    expect(text).not.toContain("http://127.0.0.1");
    expect(text).not.toContain("upstream-secret");
    expect(await seriousAccessibilityViolations(page)).toEqual([]);
    await screenshot(page, "upstreams-en-1280");
  });

  it("shows the breaker opening without a reload", async () => {
    const used = (await upstreamHealth()).find((endpoint) => endpoint.model === model)!;
    // When a third request in the window fails (two of three), the model's breaker at the endpoint opens;
    // the other models of that endpoint keep theirs closed.
    await failedRequest();
    const after = await upstreamHealth();
    expect(
      after.find((endpoint) => endpoint.endpoint === used.endpoint && endpoint.model === model)?.breakerState,
    ).toBe("open");
    expect(
      after
        .filter((endpoint) => endpoint.endpoint === used.endpoint && endpoint.model !== model)
        .map((endpoint) => endpoint.breakerState),
    ).toEqual(expect.arrayContaining(["closed"]));
    expect(after.filter((endpoint) => endpoint.breakerState === "open")).toHaveLength(1);
    // Then the page, left open, shows it at its next refresh.
    await poll(() => rowOf(used).getByTestId("breaker-state").getAttribute("data-state")).toBe("open");
    expect(await rowOf(used).getByTestId("breaker-state").textContent()).toBe(
      "open · one attempt per request",
    );
    expect(await rowOf(used).locator("td").last().textContent()).toBe("—");
  });

  it("fits a phone in Korean without scrolling sideways", async () => {
    await page.evaluate(`window.localStorage.setItem("won-console.language", "ko")`);
    await page.setViewportSize(phone);
    await page.reload();
    await page.getByTestId("upstreams-table").waitFor();
    await page.waitForLoadState("networkidle");
    expect(await page.locator("h1").textContent()).toBe("업스트림");
    expect(await page.getByRole("link", { name: "업스트림" }).getAttribute("aria-current")).toBe("page");
    await screenshot(page, "upstreams-ko-390", { fullPage: false });
    expect(await page.evaluate<number>("document.documentElement.scrollWidth")).toBeLessThanOrEqual(
      phone.width,
    );
  });
});
