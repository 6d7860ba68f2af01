import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { modelFamilies } from "../../src/config";
import { findModel, installModels } from "../../src/providers/catalog";
import type { ModelFamily } from "../../src/providers/provider";
import { type Simulator, startSimulator } from "../../src/providers/simulator/simulator";
import { type FaultyUpstream, startFaultyUpstream } from "../support/faulty-upstream";
import { type GatewayHarness, startGatewayHarness, testSecrets } from "../support/gateway-harness";
import { type Browser, launchBrowser, screenshot, seriousAccessibilityViolations } from "./support/browser";
import { patienceMs, poll } from "./support/patient";

/**
 * The activity page of a request a configured fallback answered, in a real browser against the real
 * gateway: the row shows the model requested and the one that answered and was charged ("A → B"), and the
 * page lists the requests a fallback answered when filtered by it.
 */

const userId = "fallen-back";

let simulator: Simulator;
let failing: FaultyUpstream;
let harness: GatewayHarness;
let browser: Browser;
let page: Page;
const requestIds = { fallenBack: "", direct: "" };

beforeAll(async () => {
  simulator = await startSimulator({});
  failing = await startFaultyUpstream(simulator.url);
  failing.setPlan(() => ({ kind: "status", status: 503 }));
  // zeta-mini falls back to gamma-4-3 (as a models file's `fallbacks` says); zeta's upstream answers 503.
  installModels([{ ...findModel("zeta-mini")!, fallbacks: ["gamma-4-3"] }]);
  harness = await startGatewayHarness({
    label: "console_activity_fallback",
    billing: {},
    service: {
      adminToken: testSecrets.adminToken,
      upstreams: Object.fromEntries(
        modelFamilies.map((family) => [
          family,
          { baseUrl: family === "zeta" ? failing.url : simulator.url, apiKey: `secret-${family}` },
        ]),
      ) as Record<ModelFamily, { baseUrl: string; apiKey: string }>,
    },
  });
  await harness.topUp({ kind: "user", id: userId }, "100000");
  const sessionToken = await harness.session(userId);
  const client = harness.openai((await harness.issueKey(sessionToken, { name: "main key" })).key);
  const messages = [{ role: "user" as const, content: "Fall back" }];
  const fallenBack = await client.chat.completions.create({ model: "zeta-mini", messages }).withResponse();
  requestIds.fallenBack = fallenBack.response.headers.get("x-request-id")!;
  const direct = await client.chat.completions.create({ model: "gamma-4-3", messages }).withResponse();
  requestIds.direct = direct.response.headers.get("x-request-id")!;

  browser = await launchBrowser({ locale: "en-US", origin: harness.url });
  page = browser.page;
  page.setDefaultTimeout(patienceMs);
  await page.goto(`${harness.url}/console/`);
  await page.getByLabel("Session token").fill(sessionToken);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByTestId("personal-balance").waitFor();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await harness?.close();
  await failing?.close();
  await simulator?.close();
});

const rowOf = (requestId: string) => page.getByTestId("activity-row").filter({ hasText: requestId });

describe("the activity page of a request a fallback answered, in Chromium", { timeout: 120_000 }, () => {
  it("given zeta-mini answered by its fallback gamma-4-3, when the activity page is read, then its row shows zeta-mini → gamma-4-3, and a request for gamma-4-3 itself shows only gamma-4-3", async () => {
    await page.getByRole("link", { name: "Activity" }).click();
    await page.getByRole("heading", { name: "Activity", level: 1 }).waitFor();
    await poll(async () => {
      await page.getByRole("button", { name: "Refresh" }).click();
      return page.getByTestId("activity-row").count();
    }).toBe(2);

    const fallenBack = rowOf(requestIds.fallenBack);
    expect(await fallenBack.getByTestId("activity-model").textContent()).toBe("zeta-mini → gamma-4-3");
    expect(await fallenBack.textContent()).toContain("answered and charged by its fallback");
    const direct = rowOf(requestIds.direct);
    expect(await direct.getByTestId("activity-model").textContent()).toBe("gamma-4-3");
    expect(await direct.textContent()).not.toContain("fallback");
    await screenshot(page, "activity-fallback-en-1366");
    expect(await seriousAccessibilityViolations(page)).toEqual([]);
  });

  it("given the same two requests, when the activity is filtered by the fallback that answered, gamma-4-3, then only the request gamma-4-3 answered for zeta-mini is listed", async () => {
    await page.getByLabel("Answered by fallback").selectOption("gamma-4-3");
    await page.getByRole("button", { name: "Apply" }).click();
    await poll(() => page.getByTestId("activity-row").count()).toBe(1);
    expect(await rowOf(requestIds.fallenBack).count()).toBe(1);
    expect(await seriousAccessibilityViolations(page)).toEqual([]);
  });
});
