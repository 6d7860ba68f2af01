import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GatewayHarness, startGatewayHarness, testSecrets } from "../support/gateway-harness";
import { type Browser, launchBrowser } from "./support/browser";
import { patienceMs, poll, topUp } from "./support/patient";

/**
 * A double click on a form that creates something sends it once: one key, one webhook endpoint, one top-up.
 * The page's timers run late here, as on a busy page or a slow phone, where the browser serves input first:
 * the second click then lands before the mutation's pending state (which TanStack Query announces on a
 * timer) has disabled the button. A top-up, whose form renders at once on submit, was already credited
 * once; it is kept here beside the others, as the promise it is.
 */

const userId = "doyun";
const organizationId = "org-double-submit";

let harness: GatewayHarness;
let browser: Browser;
let page: Page;

async function asUser<T>(path: string): Promise<T> {
  const response = await fetch(`${harness.url}${path}`, {
    headers: { authorization: `Bearer ${await harness.session(userId, organizationId)}` },
  });
  return (await response.json()) as T;
}

async function asAdmin<T>(path: string): Promise<T> {
  const response = await fetch(`${harness.url}${path}`, {
    headers: { authorization: `Bearer ${testSecrets.adminToken}` },
  });
  return (await response.json()) as T;
}

/** Run in the page before its own scripts: no timer fires sooner than 300 ms. */
const lateTimers = `{
  const setTimeoutOfPage = window.setTimeout;
  window.setTimeout = (handler, delayMs, ...rest) => setTimeoutOfPage(handler, Math.max(delayMs ?? 0, 300), ...rest);
}`;

const keyNamesOf = async (path: string) =>
  (await asUser<{ data: { name: string }[] }>(path)).data.map((key) => key.name);

beforeAll(async () => {
  harness = await startGatewayHarness({
    label: "console_double_submit",
    billing: {},
    service: { adminToken: testSecrets.adminToken, webhookAllowPrivateNetworks: true },
  });
  await topUp(harness, { kind: "user", id: userId }, "1000");
  browser = await launchBrowser({ locale: "en-US", origin: harness.url });
  page = browser.page;
  page.setDefaultTimeout(patienceMs);
  await page.addInitScript(lateTimers);
  await page.goto(`${harness.url}/console/`);
  await page.getByLabel("Session token").fill(await harness.session(userId, organizationId));
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByTestId("signed-in-as").waitFor();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await harness?.close();
});

describe("a form sent by a double click, in Chromium", { timeout: 120_000 }, () => {
  it("given a double click on Issue, then one key is issued, the one whose secret is shown", async () => {
    await page.getByRole("link", { name: "API keys" }).click();
    await page.getByLabel("Name").fill("double-clicked key");

    await page.getByRole("button", { name: "Issue", exact: true }).dblclick();

    await page.getByTestId("new-key-value").waitFor();
    await poll(() => page.getByTestId("key-row-double-clicked key").count()).toBe(1);
    // Anything a second submission sent has been answered by now.
    await page.waitForTimeout(500);
    expect(await keyNamesOf("/llm/apis")).toEqual(["double-clicked key"]);
  });

  it("given a double click on Add endpoint, then one endpoint is added", async () => {
    await page.getByRole("link", { name: "Webhooks" }).click();
    await page.getByLabel("URL").fill("http://127.0.0.1:9/double-clicked");
    await page.getByRole("checkbox", { name: "Funds low (balance.low)" }).check();

    await page.getByRole("button", { name: "Add endpoint" }).dblclick();

    // An error the page shows instead fails here, in its own words, rather than as a secret never shown.
    await page.getByTestId("webhook-secret").or(page.locator("p.error")).first().waitFor();
    expect(await page.locator("p.error").allTextContents()).toEqual([]);
    await page.waitForTimeout(500);
    const endpoints = await asUser<{ data: { url: string }[] }>("/llm/webhooks?isOrganization=false");
    expect(endpoints.data.map((endpoint) => endpoint.url)).toEqual(["http://127.0.0.1:9/double-clicked"]);
  });

  it("given a double click on Top up, then the account is credited once", async () => {
    await page.goto(`${harness.url}/console/admin/accounts`);
    await page.getByLabel("Admin token").fill(testSecrets.adminToken);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByTestId("accounts-table").waitFor();
    const form = page.getByRole("region", { name: "Top up" });
    await form.getByLabel("Id", { exact: true }).fill(userId);
    await form.getByLabel("Amount (won)").fill("250");
    await form.getByLabel("Reference").fill("invoice 2026-12 #7");

    await form.getByRole("button", { name: "Top up", exact: true }).dblclick();

    await page.getByTestId("top-up-result").waitFor();
    await page.waitForTimeout(500);
    expect((await asAdmin<{ balanceWon: string }>(`/admin/accounts/user/${userId}`)).balanceWon).toBe("1250");
    expect(await page.getByTestId("top-up-result").textContent()).toBe("Topped up. New balance: ₩1,250");
  });

  it("given a double click on an admin's Issue key, then one key is issued", async () => {
    const card = page.getByRole("region", { name: "Issue a key for an account" });
    await card.getByLabel("Account id").fill(userId);
    await card.getByLabel("Name").fill("admin double-clicked key");

    await card.getByRole("button", { name: "Issue", exact: true }).dblclick();

    await page.getByTestId("admin-new-key").waitFor();
    await page.waitForTimeout(500);
    expect((await keyNamesOf("/llm/apis")).sort()).toEqual([
      "admin double-clicked key",
      "double-clicked key",
    ]);
  });

  it("given a double click on Save price, then one price change is recorded", async () => {
    const model = "alpha-5.4-mini";
    const changes = async () =>
      (await asAdmin<{ data: unknown[] }>(`/admin/prices/history?model=${model}`)).data.length;
    const before = await changes();
    await page.getByRole("link", { name: "Prices & discounts" }).click();
    const form = page.getByRole("region", { name: "Set price" });
    await form.getByLabel("Model").selectOption(model);
    await form.getByLabel("Input (USD / 1M)", { exact: true }).fill("0.2");

    await form.getByRole("button", { name: "Save" }).dblclick();

    await form.getByRole("status").getByText("Saved").waitFor();
    await page.waitForTimeout(500);
    expect(await changes()).toBe(before + 1);
  });
});
