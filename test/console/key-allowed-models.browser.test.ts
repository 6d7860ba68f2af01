import OpenAI from "openai";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GatewayHarness, startGatewayHarness, testSecrets } from "../support/gateway-harness";
import { type Browser, launchBrowser, screenshot, seriousAccessibilityViolations } from "./support/browser";
import { patienceMs, poll, topUp } from "./support/patient";

/**
 * A key's allowed models set from the console's limits dialog in a real browser against the real gateway:
 * ticked models and families are what the key may call (another model is refused 403/150), nothing ticked
 * is every model again, the admin's dialog does the same on any key, and the form fits a phone in Korean.
 */

const userId = "yuna";
const keyName = "models key";
const phone = { width: 390, height: 844 };

let harness: GatewayHarness;
let browser: Browser;
let page: Page;
let apiKey = "";

async function statusOf(model: string): Promise<number> {
  return harness
    .openai(apiKey, { maxRetries: 0 })
    .chat.completions.create({ model, max_tokens: 20, messages: [{ role: "user", content: "Hello" }] })
    .then(
      () => 200,
      (error: unknown) => (error instanceof OpenAI.APIError ? (error.status ?? 0) : 0),
    );
}

async function allowedModelsOfKey(): Promise<unknown> {
  const response = await fetch(`${harness.url}/llm/apis?isOrganization=false`, {
    headers: { authorization: `Bearer ${await harness.session(userId)}` },
  });
  const keys = (await response.json()) as { data: { name: string; limits: { allowedModels: unknown } }[] };
  return keys.data.find((key) => key.name === keyName)?.limits.allowedModels;
}

beforeAll(async () => {
  harness = await startGatewayHarness({
    label: "console_allowed_models",
    billing: {},
    service: { adminToken: testSecrets.adminToken },
  });
  await topUp(harness, { kind: "user", id: userId }, "1000");
  const sessionToken = await harness.session(userId);
  apiKey = (await harness.issueKey(sessionToken, { name: keyName })).key;
  browser = await launchBrowser({ locale: "en-US", origin: harness.url });
  page = browser.page;
  page.setDefaultTimeout(patienceMs);
  await page.goto(`${harness.url}/console/`);
  await page.getByLabel("Session token").fill(sessionToken);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("link", { name: "API keys" }).click();
  await page.getByTestId(`key-row-${keyName}`).waitFor();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await harness?.close();
});

describe("a key's allowed models in the console, in Chromium", { timeout: 120_000 }, () => {
  it("ticks a model and a family, shows them, and the key is refused any other model", async () => {
    const row = page.getByTestId(`key-row-${keyName}`);
    await row.getByRole("button", { name: "Set limits" }).click();
    const dialog = page.getByRole("dialog", { name: `Set limits: ${keyName}` });
    const models = dialog.getByRole("group", { name: "Allowed models" });
    await models.getByLabel("alpha-5.4-mini", { exact: true }).waitFor();
    // Every model of the catalog and every family is offered, none ticked: every model allowed.
    expect(await models.getByRole("checkbox").count()).toBe(23 + 6);
    expect(await models.getByRole("checkbox", { checked: true }).count()).toBe(0);

    await models.getByLabel("alpha-5.4-mini", { exact: true }).check();
    await models.getByLabel("beta · every model of the family").check();
    expect(await seriousAccessibilityViolations(page)).toEqual([]);
    await screenshot(page, "allowed-models-dialog-en");
    await dialog.getByRole("button", { name: "Save limits" }).click();

    await poll(() => row.getByTestId(`key-limits-${keyName}`).textContent()).toContain(
      "only: alpha-5.4-mini, beta/*",
    );
    expect(await allowedModelsOfKey()).toEqual(["alpha-5.4-mini", "beta/*"]);
    expect(await statusOf("alpha-5.4-mini")).toBe(200);
    expect(await statusOf("beta-3.1-pro")).toBe(200);
    expect(await statusOf("gamma-4-3")).toBe(403);
  });

  it("opens with the key's models ticked, and unticking them all allows every model again", async () => {
    const row = page.getByTestId(`key-row-${keyName}`);
    await row.getByRole("button", { name: "Set limits" }).click();
    const models = page.getByRole("dialog").getByRole("group", { name: "Allowed models" });
    await models.getByLabel("alpha-5.4-mini", { exact: true }).waitFor();
    expect(await models.getByLabel("alpha-5.4-mini", { exact: true }).isChecked()).toBe(true);
    expect(await models.getByLabel("beta · every model of the family").isChecked()).toBe(true);
    expect(await models.getByRole("checkbox", { checked: true }).count()).toBe(2);

    await models.getByLabel("alpha-5.4-mini", { exact: true }).uncheck();
    await models.getByLabel("beta · every model of the family").uncheck();
    await page.getByRole("dialog").getByRole("button", { name: "Save limits" }).click();

    await poll(() => row.getByTestId(`key-limits-${keyName}`).textContent()).toContain("No limits");
    expect(await allowedModelsOfKey()).toBeNull();
    expect(await statusOf("gamma-4-3")).toBe(200);
  });

  it("fits a phone in Korean", async () => {
    await page.evaluate(`window.localStorage.setItem("won-console.language", "ko")`);
    await page.setViewportSize(phone);
    await page.reload();
    const row = page.getByTestId(`key-row-${keyName}`);
    await row.getByRole("button", { name: "한도 설정" }).click();
    const models = page.getByRole("dialog").getByRole("group", { name: "허용 모델" });
    await models.getByLabel("zeta · 계열의 모든 모델").waitFor();
    expect(await models.textContent()).toContain("모두 비워 두면 모든 모델을 쓸 수 있습니다");
    expect(await seriousAccessibilityViolations(page)).toEqual([]);
    await screenshot(page, "allowed-models-dialog-ko-390", { fullPage: false });
    expect(await page.evaluate<number>("document.documentElement.scrollWidth")).toBeLessThanOrEqual(
      phone.width,
    );
    await page.getByRole("dialog").getByRole("button", { name: "취소" }).click();
    await page.evaluate(`window.localStorage.setItem("won-console.language", "en")`);
    await page.setViewportSize({ width: 1366, height: 900 });
  });

  it("given the models failing to load, then the dialog says why and Cancel closes it", async () => {
    const modelsList = (url: URL) => url.pathname === "/llm/models";
    await page.route(modelsList, (route) =>
      route.fulfill({ status: 503, json: { status: 300, message: "The catalog is out of reach" } }),
    );
    try {
      await page.reload();
      const row = page.getByTestId(`key-row-${keyName}`);
      await row.getByRole("button", { name: "Set limits" }).click();
      const dialog = page.getByRole("dialog", { name: `Set limits: ${keyName}` });
      await dialog.getByRole("alert").getByText("The catalog is out of reach", { exact: false }).waitFor();
      await dialog.getByRole("button", { name: "Cancel" }).click();
      await poll(() => page.getByRole("dialog").count()).toBe(0);
    } finally {
      await page.unroute(modelsList);
    }
  });

  it("lets an admin limit any key to a family from the account's keys", async () => {
    await page.goto(`${harness.url}/console/admin/accounts`);
    await page.getByLabel("Admin token").fill(testSecrets.adminToken);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page
      .getByTestId("accounts-table")
      .getByRole("row")
      .filter({ hasText: userId })
      .getByRole("button")
      .click();
    await page.getByTestId(`admin-key-limits-${keyName}`).waitFor();

    await page.getByRole("button", { name: `Set limits ${keyName}` }).click();
    const models = page.getByRole("dialog").getByRole("group", { name: "Allowed models" });
    await models.getByLabel("zeta · every model of the family").check();
    await page.getByRole("dialog").getByRole("button", { name: "Save limits" }).click();

    await poll(() => page.getByTestId(`admin-key-limits-${keyName}`).textContent()).toContain("only: zeta/*");
    expect(await allowedModelsOfKey()).toEqual(["zeta/*"]);
    expect(await statusOf("zeta-mini")).toBe(200);
    expect(await statusOf("alpha-5.4-mini")).toBe(403);
  });

  it("tells the model epsilon from the family epsilon, a word naming both", async () => {
    await page.getByRole("button", { name: `Set limits ${keyName}` }).click();
    const models = page.getByRole("dialog").getByRole("group", { name: "Allowed models" });
    await models.getByLabel("zeta · every model of the family").uncheck();
    await models.getByLabel("epsilon", { exact: true }).check();
    await page.getByRole("dialog").getByRole("button", { name: "Save limits" }).click();
    // The row shows the limits once the server has answered the save, which it does only when this
    // process's admission copy has seen them (C4); the key's stored limits alone may be ahead of that copy.
    await poll(() => page.getByTestId(`admin-key-limits-${keyName}`).textContent()).toContain(
      "only: epsilon",
    );
    expect(await allowedModelsOfKey()).toEqual(["epsilon"]);
    expect(await statusOf("epsilon")).toBe(200);
    expect(await statusOf("epsilon-pro")).toBe(403);

    await page.getByRole("button", { name: `Set limits ${keyName}` }).click();
    expect(await models.getByLabel("epsilon", { exact: true }).isChecked()).toBe(true);
    expect(await models.getByLabel("epsilon · every model of the family").isChecked()).toBe(false);
    await page.getByRole("dialog").getByRole("button", { name: "Cancel" }).click();
  });
});
