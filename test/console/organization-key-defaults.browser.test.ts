import OpenAI from "openai";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GatewayHarness, startGatewayHarness } from "../support/gateway-harness";
import { type Browser, launchBrowser, screenshot, seriousAccessibilityViolations } from "./support/browser";
import { patienceMs, poll, topUp } from "./support/patient";

/**
 * An organization's models for its new keys, set in the console in a real browser against the real gateway:
 * an owner ticks them on the organization's keys, a key then issued in the console may call exactly those
 * (the API says so, and the key is refused any other model), a member sees them but is offered no way to
 * change them, and the owner clears them again.
 */

const organizationId = "org-console-key-defaults";
const owner = "hana";
const member = "minho";
const keyName = "issued after the default";
const phone = { width: 390, height: 844 };

let harness: GatewayHarness;
let browser: Browser;
let page: Page;
let issuedKey = "";

async function api(method: string, path: string, userId: string, body?: unknown) {
  const response = await fetch(`${harness.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${await harness.session(userId, organizationId)}`,
      "content-type": "application/json",
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function defaultModels(): Promise<unknown> {
  return (await api("GET", "/llm/organization/key-defaults", owner)).body.allowedModels;
}

async function limitsOfIssuedKey(): Promise<unknown> {
  const keys = (await api("GET", "/llm/apis?isOrganization=true", owner)).body as {
    data: { name: string; limits: unknown }[];
  };
  return keys.data.find((key) => key.name === keyName)?.limits;
}

async function statusOf(model: string): Promise<number> {
  return harness
    .openai(issuedKey, { maxRetries: 0 })
    .chat.completions.create({ model, max_tokens: 20, messages: [{ role: "user", content: "Hello" }] })
    .then(
      () => 200,
      (error: unknown) => (error instanceof OpenAI.APIError ? (error.status ?? 0) : 0),
    );
}

async function signInAs(userId: string) {
  await page.goto(`${harness.url}/console/`);
  await page.getByLabel("Session token").fill(await harness.session(userId, organizationId));
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByTestId("signed-in-as").waitFor();
}

/** The organization's keys, with the card of the models its new keys start with. */
async function openOrganizationKeys() {
  await page.getByRole("link", { name: "API keys" }).click();
  await page.getByRole("radio", { name: "Organization" }).check();
  const card = page.getByRole("region", { name: "Models for new keys" });
  await card.getByTestId("key-defaults").waitFor();
  return card;
}

beforeAll(async () => {
  harness = await startGatewayHarness({ label: "console_key_defaults", billing: {} });
  // The first member the organization sees is its owner; she makes minho a member.
  await api("GET", "/llm/organization/members", owner);
  expect((await api("PUT", `/llm/organization/members/${member}`, owner, { role: "member" })).status).toBe(
    200,
  );
  await topUp(harness, { kind: "organization", id: organizationId }, "1000");
  browser = await launchBrowser({ locale: "en-US", origin: harness.url });
  page = browser.page;
  page.setDefaultTimeout(patienceMs);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await harness?.close();
});

describe("an organization's models for its new keys in the console, in Chromium", {
  timeout: 120_000,
}, () => {
  it("an owner sets them, and a key then issued in the console may call exactly those", async () => {
    await signInAs(owner);
    const card = await openOrganizationKeys();
    expect(await card.getByTestId("key-defaults").textContent()).toContain("every model");

    await card.getByRole("button", { name: "Set models for new keys" }).click();
    const dialog = page.getByRole("dialog", { name: "Models for new keys" });
    const models = dialog.getByRole("group", { name: "Allowed models" });
    await models.getByLabel("alpha-5.4-mini", { exact: true }).check();
    await models.getByLabel("beta · every model of the family").check();
    expect(await seriousAccessibilityViolations(page)).toEqual([]);
    await screenshot(page, "key-defaults-dialog-en");
    await dialog.getByRole("button", { name: "Save default" }).click();

    await poll(() => card.getByTestId("key-defaults").textContent()).toContain("alpha-5.4-mini, beta/*");
    expect(await page.getByRole("dialog").count()).toBe(0);
    expect(await defaultModels()).toEqual(["alpha-5.4-mini", "beta/*"]);

    await page.getByLabel("Name").fill(keyName);
    await page.getByRole("button", { name: "Issue", exact: true }).click();
    issuedKey = (await page.getByTestId("new-key-value").textContent()) ?? "";
    expect(await limitsOfIssuedKey()).toEqual({
      monthlySpendLimitWon: null,
      totalSpendLimitWon: null,
      rateLimitRequestsPerMinute: null,
      allowedModels: ["alpha-5.4-mini", "beta/*"],
    });
    await poll(() => page.getByTestId(`key-limits-${keyName}`).textContent()).toContain(
      "only: alpha-5.4-mini, beta/*",
    );
    expect(await statusOf("alpha-5.4-mini")).toBe(200);
    expect(await statusOf("beta-3.1-pro")).toBe(200);
    expect(await statusOf("gamma-4-3")).toBe(403);
  });

  it("a member sees them, and is offered no way to change them", async () => {
    await page.getByRole("button", { name: "Sign out" }).click();
    await signInAs(member);
    const card = await openOrganizationKeys();
    await poll(() => card.getByTestId("key-defaults").textContent()).toContain("alpha-5.4-mini, beta/*");
    await card
      .getByText("Only the organization's owners and admins set the models its new keys", {
        exact: false,
      })
      .waitFor();
    expect(await card.getByRole("button").count()).toBe(0);
    // Nor would the gateway take it from them.
    expect((await api("PUT", "/llm/organization/key-defaults", member, { allowedModels: null })).status).toBe(
      403,
    );
    expect(await defaultModels()).toEqual(["alpha-5.4-mini", "beta/*"]);
  });

  it("shows them in Korean on a phone", async () => {
    await page.evaluate(`window.localStorage.setItem("won-console.language", "ko")`);
    await page.setViewportSize(phone);
    await page.reload();
    await page.getByRole("radio", { name: "조직" }).check();
    const card = page.getByRole("region", { name: "새 키의 기본 모델" });
    await poll(() => card.getByTestId("key-defaults").textContent()).toContain("alpha-5.4-mini, beta/*");
    expect(await card.textContent()).toContain("새 키의 기본 모델은 조직의 소유자와 관리자만");
    expect(await seriousAccessibilityViolations(page)).toEqual([]);
    await screenshot(page, "key-defaults-member-ko-390", { fullPage: false });
    expect(await page.evaluate<number>("document.documentElement.scrollWidth")).toBeLessThanOrEqual(
      phone.width,
    );
    await page.evaluate(`window.localStorage.setItem("won-console.language", "en")`);
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.reload();
  });

  it("an owner opens them ticked and clears them: new keys may call every model again", async () => {
    await page.getByRole("button", { name: "Sign out" }).click();
    await signInAs(owner);
    const card = await openOrganizationKeys();
    await card.getByRole("button", { name: "Set models for new keys" }).click();
    const dialog = page.getByRole("dialog", { name: "Models for new keys" });
    const models = dialog.getByRole("group", { name: "Allowed models" });
    await models.getByLabel("alpha-5.4-mini", { exact: true }).waitFor();
    expect(await models.getByLabel("alpha-5.4-mini", { exact: true }).isChecked()).toBe(true);
    expect(await models.getByLabel("beta · every model of the family").isChecked()).toBe(true);
    expect(await models.getByRole("checkbox", { checked: true }).count()).toBe(2);

    await dialog.getByRole("button", { name: "Clear default" }).click();

    await poll(() => card.getByTestId("key-defaults").textContent()).toContain("every model");
    expect(await defaultModels()).toBeNull();
    // The key issued under the default keeps its own limits.
    expect(await limitsOfIssuedKey()).toMatchObject({ allowedModels: ["alpha-5.4-mini", "beta/*"] });
  });
});
