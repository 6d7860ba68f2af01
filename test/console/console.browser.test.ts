import { randomUUID } from "node:crypto";
import { readFile } from "node:fs/promises";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { modelPriceStreamIdOf } from "../../src/billing/commands/set-model-price";
import { LedgerSigningKey } from "../../src/ledger/integrity/ledger-signing-key";
import { type GatewayHarness, startGatewayHarness, testSecrets } from "../support/gateway-harness";
import { type Browser, launchBrowser, screenshot, seriousAccessibilityViolations } from "./support/browser";
import { patienceMs, poll, topUp } from "./support/patient";

/**
 * The web console in a real browser against the real gateway (billing workers on): sign in, issue and copy
 * a key, use it with the official client, see the charge in the table and the chart, deactivate the key and
 * see the next call refused, admin top-up and price change, Korean and English, an axe check on every page.
 */

const userId = "mina";
const organizationId = "acme";
const model = "alpha-5.4-mini";
const ledgerSigningKey = LedgerSigningKey.parse(Buffer.alloc(32, 5).toString("base64"));

let harness: GatewayHarness;
let browser: Browser;
let page: Page;
let apiKey = "";
let sessionToken = "";

/** The element that has focus, as its tag and text (evaluated in the page). */
const focused = () =>
  page.evaluate<string>("document.activeElement?.tagName + ': ' + document.activeElement?.textContent");

/** Everything the page keeps in Web Storage, as one string (evaluated in the page). */
const browserStorage = "JSON.stringify({ ...window.localStorage, ...window.sessionStorage })";

async function expectAccessible(name: string): Promise<void> {
  await screenshot(page, name);
  expect(await seriousAccessibilityViolations(page), name).toEqual([]);
}

async function go(path: string): Promise<void> {
  await page.goto(`${harness.url}/console${path}`);
}

async function chargesOf(isOrganization: boolean): Promise<{ requestId: string; amountWon: string }[]> {
  const response = await fetch(`${harness.url}/llm/billing?isOrganization=${isOrganization}`, {
    headers: { authorization: `Bearer ${sessionToken}` },
  });
  return ((await response.json()) as { data: { requestId: string; amountWon: string }[] }).data;
}

/** The admin's top-up form, filled for a user account (not sent). */
async function fillTopUpForm(user: string, amountWon: string, reference: string) {
  const topUpForm = page.getByRole("region", { name: "Top up" });
  await topUpForm.getByLabel("Kind").selectOption("user");
  await topUpForm.getByLabel("Id", { exact: true }).fill(user);
  await topUpForm.getByLabel("Amount (won)").fill(amountWon);
  await topUpForm.getByLabel("Reference").fill(reference);
  return topUpForm;
}

async function balanceOf(user: string): Promise<string> {
  const response = await fetch(`${harness.url}/admin/accounts/user/${user}`, {
    headers: { authorization: `Bearer ${testSecrets.adminToken}` },
  });
  return ((await response.json()) as { balanceWon: string }).balanceWon;
}

beforeAll(async () => {
  harness = await startGatewayHarness({
    label: "console_browser",
    billing: {},
    // With the signing key the checkpointer seals the log, so the ledger page has a checkpoint to show.
    service: { adminToken: testSecrets.adminToken, ledgerSigningKey },
  });
  await topUp(harness, { kind: "user", id: userId }, "10000");
  sessionToken = await harness.session(userId, organizationId);
  browser = await launchBrowser({ locale: "ko-KR", origin: harness.url });
  page = browser.page;
  page.setDefaultTimeout(patienceMs);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await harness?.close();
});

describe("the web console in Chromium", { timeout: 120_000 }, () => {
  it("speaks Korean when the browser asks for it, and switches to English", async () => {
    await go("/");
    await poll(() => page.getByRole("heading", { level: 1 }).textContent()).toBe("콘솔 로그인");
    expect(await page.locator("html").getAttribute("lang")).toBe("ko");
    await expectAccessible("01-sign-in-ko");

    await page.getByLabel("언어").selectOption("en");
    await poll(() => page.getByRole("heading", { level: 1 }).textContent()).toBe("Sign in to the console");
    expect(await page.locator("html").getAttribute("lang")).toBe("en");
  });

  it("signs in with a session token into an httpOnly cookie the page cannot read", async () => {
    await page.getByLabel("Session token").fill(sessionToken);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByTestId("personal-balance").waitFor();
    await poll(() => page.getByTestId("personal-balance").textContent()).toBe("₩10,000");

    const cookies = await browser.context.cookies(harness.url);
    const session = cookies.find((cookie) => cookie.name === "session");
    expect(session).toMatchObject({ httpOnly: true, sameSite: "Strict", value: sessionToken });
    expect(await page.evaluate<string>("document.cookie")).not.toContain(sessionToken);
    await expectAccessible("02-overview-en");
  });

  it("issues a key shown once, with a copy button", async () => {
    await page.getByRole("link", { name: "API keys" }).click();
    await page.getByLabel("Name").fill("browser key");
    await page.getByLabel("Description").fill("issued in Chromium");
    await page.getByRole("button", { name: "Issue", exact: true }).click();
    await page.getByTestId("new-key-value").waitFor();
    // Issue was disabled while the key was made: focus is on the new key's card, not lost to the page.
    await poll(focused).toBe("H2: Your new API key");
    expect(await page.getByRole("alert").first().textContent()).toContain("you will not see this key again");
    const shown = (await page.getByTestId("new-key-value").textContent()) ?? "";
    expect(shown).toMatch(/^svc_[A-Za-z0-9_-]{43}$/);

    await page.getByRole("button", { name: "Copy" }).click();
    await page.getByRole("button", { name: "Copied" }).waitFor();
    apiKey = await page.evaluate<string>("navigator.clipboard.readText()");
    expect(apiKey).toBe(shown);
    await page.getByTestId("key-row-browser key").waitFor();
    await expectAccessible("03-keys-issued");

    await page.getByRole("button", { name: "Done" }).click();
    expect(await page.getByTestId("new-key-value").count()).toBe(0);
    // The value is never re-fetchable: the list shows only a preview.
    const listed = await page.getByTestId("key-row-browser key").textContent();
    expect(listed).not.toContain(apiKey);
    expect(listed).toContain(`${apiKey.slice(0, 8)}…${apiKey.slice(-4)}`);
    // No secret in storage.
    const storage = await page.evaluate<string>(browserStorage);
    expect(storage).not.toContain(apiKey);
    expect(storage).not.toContain(sessionToken);
  });

  it("selects the new key and says to copy it with the keyboard where the browser gives no clipboard", async () => {
    // Plain HTTP under a host name other than localhost is no secure context: navigator.clipboard is undefined.
    const origin = harness.url.replace("127.0.0.1", "console.test");
    const insecure = await launchBrowser({
      locale: "en-US",
      origin,
      args: ["--host-resolver-rules=MAP console.test 127.0.0.1"],
      clipboard: false,
    });
    try {
      const other = insecure.page;
      other.setDefaultTimeout(patienceMs);
      await other.goto(`${origin}/console/`);
      expect(await other.evaluate<boolean>("window.isSecureContext")).toBe(false);
      await other.getByLabel("Session token").fill(sessionToken);
      await other.getByRole("button", { name: "Sign in" }).click();
      await other.getByTestId("personal-balance").waitFor();
      await other.getByRole("link", { name: "API keys" }).click();
      await other.getByLabel("Name").fill("insecure copy key");
      await other.getByRole("button", { name: "Issue", exact: true }).click();
      const shown = (await other.getByTestId("new-key-value").textContent()) ?? "";
      expect(shown).toMatch(/^svc_/);
      await other.getByRole("button", { name: "Copy", exact: true }).click();
      await poll(() => other.getByRole("status").filter({ hasText: "Ctrl+C" }).textContent()).toBe(
        "The browser did not let this page copy: the text is selected, press Ctrl+C (⌘C on a Mac) to copy it.",
      );
      expect(await other.evaluate<string>("window.getSelection().toString()")).toBe(shown);
      await other.getByRole("button", { name: "Done" }).click();
      const row = other.getByTestId("key-row-insecure copy key");
      await row.getByRole("button", { name: "Delete insecure copy key" }).click();
      await other.getByRole("dialog").getByRole("button", { name: "Delete" }).click();
      await poll(() => row.count()).toBe(0);
    } finally {
      await insecure.close();
    }
  });

  it("shows the charge of a call made with the official client, in the table, the chart and the CSV", async () => {
    const completion = await harness.openai(apiKey).chat.completions.create({
      model,
      messages: [{ role: "user", content: "Hello from the console test" }],
    });
    expect(completion.choices[0]?.message.content).toBeTruthy();
    await poll(async () => (await chargesOf(false)).length).toBe(1);
    const [charge] = await chargesOf(false);

    await page.getByRole("link", { name: "Usage & charges" }).click();
    await page.getByTestId("charge-row").first().waitFor();
    expect(await page.getByTestId("charge-row").count()).toBe(1);
    const row = page.getByTestId("charge-row").first();
    expect(await row.textContent()).toContain(model);
    expect(await row.textContent()).toContain("browser key");
    await row.getByText("Breakdown").click();
    const breakdown = (await row.locator("dl").textContent()) ?? "";
    expect(breakdown).toContain(charge!.requestId);
    expect(breakdown).toContain("1,400");
    expect(breakdown).toMatch(/₩\d+\.\d{6}/);
    expect(breakdown).toContain("upstream");
    // The chart has a bar for today (read from the usage-by-day projection).
    await poll(() => page.getByTestId("chart-won").locator(".recharts-bar-rectangle").count()).toBe(1);
    await poll(() => page.getByTestId("chart-tokens").locator(".recharts-bar-rectangle").count()).toBe(1);
    expect(await page.getByTestId("usage-total-won").textContent()).not.toBe("₩0");
    // A range of almost three years is charted by month, today's charge in its bar.
    const filter = page.getByRole("form", { name: "Filter" });
    await filter.getByLabel("From").fill("2024-01-01");
    await filter.getByRole("button", { name: "Apply" }).click();
    await poll(() => page.getByTestId("chart-won").getByRole("heading").textContent()).toBe("Won per month");
    await poll(() => page.getByTestId("chart-won").locator(".recharts-bar-rectangle").count()).toBe(1);
    await poll(() => page.getByTestId("chart-tokens").locator(".recharts-bar-rectangle").count()).toBe(1);
    expect(await page.getByTestId("chart-tokens").getByRole("heading").textContent()).toBe(
      "Tokens per month",
    );

    const [download] = await Promise.all([
      page.waitForEvent("download"),
      page.getByRole("button", { name: "Download CSV" }).click(),
    ]);
    const csv = await readFile((await download.path())!, "utf8");
    const lines = csv.trim().split("\r\n");
    expect(lines[0]).toContain("fx_rate_krw_per_usd");
    expect(lines).toHaveLength(2);
    expect(lines[1]).toContain(charge!.requestId);
    expect(lines[1]).toContain(charge!.amountWon);
    await expectAccessible("04-usage-en");
  });

  it("streams a chat in the playground on the signed-in session", async () => {
    await page.getByRole("link", { name: "Playground" }).click();
    await poll(() => page.getByLabel("Model").locator("option").count()).toBeGreaterThan(20);
    await page.getByLabel("Model").selectOption(model);
    await page.getByLabel("Message").fill("Stream me a few words");
    await page.getByRole("button", { name: "Send" }).click();
    await page.getByTestId("playground-usage").waitFor();
    expect(((await page.getByTestId("playground-reply").textContent()) ?? "").length).toBeGreaterThan(0);
    await expectAccessible("05-playground");
    const storage = await page.evaluate<string>(browserStorage);
    expect(storage).not.toContain("svc_");
  });

  it("deactivates the key after confirmation, and the next call is refused", async () => {
    await page.getByRole("link", { name: "API keys" }).click();
    const row = page.getByTestId("key-row-browser key");
    // Each row's buttons are told apart by the key's name, for those who hear them rather than see the row.
    for (const name of ["Set limits browser key", "Deactivate browser key", "Delete browser key"]) {
      expect(await page.getByRole("button", { name, exact: true }).count(), name).toBe(1);
    }
    await row.getByRole("button", { name: "Deactivate browser key", exact: true }).click();
    const dialog = page.getByRole("dialog");
    await dialog.waitFor();
    expect(await dialog.textContent()).toContain("Deactivate this key?");
    await expectAccessible("06-keys-confirm");
    await dialog.getByRole("button", { name: "Deactivate" }).click();
    await row.getByText("Inactive").waitFor();

    const refused = await harness
      .openai(apiKey)
      .chat.completions.create({ model, messages: [{ role: "user", content: "again" }] })
      .then(
        () => undefined,
        (error: { status?: number }) => error,
      );
    expect(refused?.status).toBe(401);

    await row.getByRole("button", { name: "Reactivate" }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Reactivate" }).click();
    await row.getByText("Active", { exact: true }).waitFor();
    await row.getByRole("button", { name: "Delete" }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Delete" }).click();
    await poll(() => page.getByTestId("key-row-browser key").count()).toBe(0);
    // The focused Delete went with its row: focus is on the page's heading, not lost to the page.
    await poll(focused).toBe("H1: API keys");
    await screenshot(page, "07-keys-after-delete");
  });

  it("issues an organization key, listed under the organization only", async () => {
    await page.getByRole("radio", { name: "Organization" }).check();
    await page.getByLabel("Name").fill("team key");
    await page.getByRole("button", { name: "Issue", exact: true }).click();
    await page.getByTestId("new-key-value").waitFor();
    await page.getByRole("button", { name: "Done" }).click();
    await page.getByTestId("key-row-team key").waitFor();
    const listed = (await (
      await fetch(`${harness.url}/llm/apis?isOrganization=true`, {
        headers: { authorization: `Bearer ${await harness.session("another-member", organizationId)}` },
      })
    ).json()) as { data: { name: string }[] };
    expect(listed.data.map((key) => key.name)).toEqual(["team key"]);
    await page.getByRole("radio", { name: "Personal" }).check();
    await poll(() => page.getByTestId("key-row-team key").count()).toBe(0);
  });

  it("sets a key's monthly spend limit, shows it with the month's spend, and the call over it is refused", async () => {
    await page.getByRole("radio", { name: "Personal" }).check();
    await page.getByLabel("Name").fill("limited key");
    await page.getByRole("button", { name: "Issue", exact: true }).click();
    const limitedKey = (await page.getByTestId("new-key-value").textContent()) ?? "";
    await page.getByRole("button", { name: "Done" }).click();
    const row = page.getByTestId("key-row-limited key");
    expect(await row.getByTestId("key-limits-limited key").textContent()).toContain("No limits");

    await row.getByRole("button", { name: "Set limits" }).click();
    const dialog = page.getByRole("dialog", { name: "Set limits: limited key" });
    await dialog.waitFor();
    await dialog.getByLabel("Monthly spend limit (₩)").fill("0.01");
    await expectAccessible("07b-key-limits-dialog");
    await dialog.getByRole("button", { name: "Save limits" }).click();
    await poll(() => row.getByTestId("key-limits-limited key").textContent()).toContain("₩0.01 per month");

    // The first call is admitted (nothing spent yet) and spends more than ₩0.01; the next is refused.
    const client = harness.openai(limitedKey);
    await client.chat.completions.create({ model, messages: [{ role: "user", content: "one" }] });
    const refused = await client.chat.completions
      .create({ model, messages: [{ role: "user", content: "two" }] })
      .then(
        () => undefined,
        (error: { status?: number; message?: string }) => error,
      );
    expect(refused?.status).toBe(400);
    expect(refused?.message).toContain("monthly spend limit of ₩0.01");

    await page.reload();
    await page.getByTestId("key-limits-limited key").waitFor();
    expect(await page.getByTestId("key-limits-limited key").textContent()).toMatch(
      /Spent this month \(\d{4}-\d{2}\): ₩0\.\d+/,
    );
    await expectAccessible("07c-keys-with-limits");

    // Held and pending beside the balance.
    await page.getByRole("link", { name: "Overview" }).click();
    await page.getByTestId("personal-balance-held").waitFor();
    expect(await page.getByTestId("personal-balance-held").textContent()).toMatch(/^₩[\d,.]+$/);
    expect(await page.getByTestId("personal-balance-pending").textContent()).toMatch(/^₩[\d,.]+$/);
  });

  it("offers the keys of the account chosen in the activity filter, before it is applied", async () => {
    await page.getByRole("link", { name: "Activity" }).click();
    const filter = page.getByRole("form", { name: "Filter" });
    const keyChoices = () => filter.getByLabel("Key").locator("option").allTextContents();
    await poll(async () => (await keyChoices()).join("|")).toContain("limited key");
    expect((await keyChoices()).join("|")).not.toContain("team key");

    await filter.getByLabel("Account").selectOption("organization");
    await poll(async () => (await keyChoices()).join("|")).toContain("team key");
    expect((await keyChoices()).join("|")).not.toContain("limited key");
    await filter.getByLabel("Account").selectOption("personal");
    await poll(async () => (await keyChoices()).join("|")).toContain("limited key");
    expect((await keyChoices()).join("|")).not.toContain("team key");
  });

  it("lets an admin sign in with the admin token and top up an account with a reference", async () => {
    // Admin links are for admins only: an operator opens the admin area by its address.
    expect(await page.getByRole("link", { name: "Accounts" }).count()).toBe(0);
    await go("/admin/accounts");
    await page.getByRole("heading", { name: "Admin sign-in" }).waitFor();
    await expectAccessible("08-admin-sign-in");
    await page.getByLabel("Admin token").fill(testSecrets.adminToken);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByTestId("accounts-table").waitFor();
    expect(await page.getByTestId("accounts-table").textContent()).toContain(userId);
    const adminCookie = (await browser.context.cookies(harness.url)).find(
      (cookie) => cookie.name === "admin_session",
    );
    expect(adminCookie).toMatchObject({ httpOnly: true, sameSite: "Strict" });
    expect(adminCookie?.value).not.toContain(testSecrets.adminToken);

    const topUpForm = await fillTopUpForm(userId, "5000", "invoice 2026-11 #42");
    await topUpForm.getByRole("button", { name: "Top up", exact: true }).click();
    await page.getByTestId("top-up-result").waitFor();
    const balanceWon = Number(await balanceOf(userId));
    expect(balanceWon).toBeGreaterThan(14_999);
    expect(balanceWon).toBeLessThan(15_000);
    await expectAccessible("09-admin-accounts");
  });

  it("given a top-up recorded but answered 503, when the admin sends it again, then the account is credited once", async () => {
    // Given: the first attempt reaches the gateway, and its answer is replaced by a 503 on the way back
    const payer = "yuna";
    const balanceBefore = await balanceOf(payer);
    const keysSent: (string | null)[] = [];
    let attempts = 0;
    const credits = (url: URL) => url.pathname === `/admin/accounts/user/${payer}/credits`;
    await page.route(credits, async (route) => {
      keysSent.push(await route.request().headerValue("idempotency-key"));
      const answer = await route.fetch();
      attempts += 1;
      if (attempts === 1) {
        await route.fulfill({ status: 503, json: { status: 300, message: "The ledger is unavailable" } });
      } else {
        await route.fulfill({ response: answer });
      }
    });
    const topUpForm = await fillTopUpForm(payer, "700", "invoice 2026-11 #43");
    await topUpForm.getByRole("button", { name: "Top up", exact: true }).click();
    await poll(() => attempts).toBe(1);

    // When
    await topUpForm.getByRole("button", { name: "Top up", exact: true }).click();
    await page.getByTestId("top-up-result").waitFor();
    await page.unroute(credits);

    // Then
    expect(keysSent).toHaveLength(2);
    expect(keysSent[0]).toMatch(/^[0-9a-f]{32}$/);
    expect(keysSent[1]).toBe(keysSent[0]);
    expect(Number(await balanceOf(payer))).toBe(Number(balanceBefore) + 700);
  });

  it("lets an admin set a key's rate limit from the account's keys", async () => {
    const accounts = page.getByTestId("accounts-table");
    // The column and its buttons open an account's details: "Breakdown" is a charge's, not an account's.
    expect(await accounts.locator("thead th").last().textContent()).toBe("Details");
    expect(await accounts.textContent()).not.toContain("Breakdown");
    await accounts
      .getByRole("row")
      .filter({ hasText: userId })
      .getByRole("button", { name: `Details ${userId}` })
      .click();
    await page.getByTestId("account-funds").waitFor();
    expect(await page.getByTestId("account-funds").textContent()).toMatch(
      /Held: ₩[\d,.]+ · Pending: ₩[\d,.]+/,
    );
    await page.getByTestId("admin-key-limits-limited key").waitFor();
    expect(await page.getByTestId("admin-key-limits-limited key").textContent()).toContain("₩0.01 per month");

    await page.getByRole("button", { name: "Set limits limited key" }).click();
    const dialog = page.getByRole("dialog", { name: "Set limits: limited key" });
    await dialog.getByLabel("Rate limit (requests per minute)").fill("30");
    await dialog.getByRole("button", { name: "Save limits" }).click();
    await poll(() => page.getByTestId("admin-key-limits-limited key").textContent()).toContain(
      "30 requests/min",
    );
    // The form states the whole set: the monthly limit kept its value.
    expect(await page.getByTestId("admin-key-limits-limited key").textContent()).toContain("₩0.01 per month");
    await expectAccessible("09b-admin-account-keys");
  });

  it("changes a model price and a discount", async () => {
    await page.getByRole("link", { name: "Prices & discounts" }).click();
    await page.getByTestId(`price-row-${model}`).waitFor();
    const priceForm = page.getByRole("region", { name: "Set price" });
    await priceForm.getByLabel("Model").selectOption(model);
    await priceForm.getByLabel("Input (USD / 1M)", { exact: true }).fill("1.25");
    await priceForm.getByLabel("Output (USD / 1M)").fill("10");
    // The form starts from the price in force: the cached price left as is keeps its value.
    expect(await priceForm.getByLabel("Cached input (USD / 1M)").inputValue()).toBe("0.025");
    await priceForm.getByRole("button", { name: "Save" }).click();
    await poll(() => page.getByTestId(`price-row-${model}`).textContent()).toContain("$1.25");
    expect(await page.getByTestId(`price-row-${model}`).textContent()).toBe(
      `${model}$1.25$0.025$10${await page.getByTestId(`price-row-${model}`).locator("td").last().textContent()}`,
    );

    const discountForm = page.getByRole("region", { name: "Set discount" });
    await discountForm.getByLabel("Organization id", { exact: false }).fill(organizationId);
    await discountForm.getByLabel("Rate", { exact: false }).fill("0.15");
    await discountForm.getByRole("button", { name: "Save" }).click();
    await poll(() => page.getByTestId("discounts-table").textContent()).toContain("15%");
    await expectAccessible("10-admin-pricing");

    // The history, read from the ledger: the newest change first, with who made it.
    const newestPrice = page.getByTestId("price-history-table").locator("tbody tr").first();
    await poll(() => newestPrice.textContent()).toContain("$1.25");
    expect(await newestPrice.textContent()).toContain(model);
    expect(await newestPrice.textContent()).toContain("admin:console");
    await page.getByLabel("Model shown").selectOption(model);
    await poll(() => page.getByTestId("price-history-table").locator("tbody tr").count()).toBe(2);
    const priceRows = await page.getByTestId("price-history-table").locator("tbody tr").allTextContents();
    expect(priceRows[1]).toContain("system:");
    const newestDiscount = page.getByTestId("discount-history-table").locator("tbody tr").first();
    await poll(() => newestDiscount.textContent()).toContain("15%");
    expect(await newestDiscount.textContent()).toContain(organizationId);
    await expectAccessible("10b-admin-pricing-history");

    // Removed after confirmation: gone from the rules in force, and the history says who removed it.
    const discountsTable = page.getByTestId("discounts-table");
    await discountsTable.getByRole("button", { name: `Remove: any model · ${organizationId}` }).click();
    const dialog = page.getByRole("dialog");
    await dialog.waitFor();
    expect(await dialog.textContent()).toContain("Remove this rule?");
    await expectAccessible("10c-admin-discount-remove");
    await dialog.getByRole("button", { name: "Remove" }).click();
    await poll(() => discountsTable.textContent()).not.toContain(organizationId);
    await poll(() => newestDiscount.textContent()).toContain("removed");
    expect(await newestDiscount.textContent()).toContain("admin:console");
  });

  it("reads a model's price history a page at a time, older and back", async () => {
    // Given: 200 more changes of a model at its price in force, so its seed is one page further
    const pagedModel = "delta-4.6-opus";
    const inForce = (await (
      await fetch(`${harness.url}/admin/prices`, {
        headers: { authorization: `Bearer ${testSecrets.adminToken}` },
      })
    ).json()) as {
      data: { model: string; inputUsdPer1M: string; outputUsdPer1M: string; cachedInputUsdPer1M: string }[];
    };
    const price = inForce.data.find((row) => row.model === pagedModel);
    expect(price).toBeDefined();
    const changedFirstAt = Date.now();
    await harness.service.ledger.store.append({
      streamId: modelPriceStreamIdOf(pagedModel),
      expectedVersion: "any",
      events: Array.from({ length: 200 }, (_unused, index) => ({
        eventId: randomUUID(),
        event: {
          type: "ModelPriceSet" as const,
          data: {
            model: pagedModel,
            inputUsdPerMillionTokens: price?.inputUsdPer1M ?? "",
            outputUsdPerMillionTokens: price?.outputUsdPer1M ?? "",
            cachedInputUsdPerMillionTokens: price?.cachedInputUsdPer1M ?? "",
          },
          metadata: { actor: "admin", occurredAt: new Date(changedFirstAt + index).toISOString() },
        },
      })),
    });

    // When: the model's history is shown, then its older page
    await page.getByLabel("Model shown").selectOption(pagedModel);
    const rows = page.getByTestId("price-history-table").locator("tbody tr");
    await poll(() => rows.count()).toBe(200);
    const pager = page.getByRole("navigation", { name: "Price history pages" });
    await pager.getByRole("button", { name: "Older →" }).click();

    // Then: the seed alone, and Newer goes back to the 200 newest
    await poll(() => rows.count()).toBe(1);
    expect(await rows.first().textContent()).toContain("system:");
    expect(await pager.getByRole("button", { name: "Older →" }).isDisabled()).toBe(true);
    await expectAccessible("10d-admin-price-history-older");
    await pager.getByRole("button", { name: "← Newer" }).click();
    await poll(() => rows.count()).toBe(200);
  });

  it("records a manual FX rate and shows the history, in the table and a chart", async () => {
    // Given two earlier days' rates (past days: no charge of today is priced with them).
    for (const [appliesOn, rate] of [
      ["2026-11-01", "1390"],
      ["2026-11-02", "1402.5"],
    ] as const) {
      const response = await fetch(`${harness.url}/admin/fx-rates`, {
        method: "POST",
        headers: { authorization: `Bearer ${testSecrets.adminToken}`, "content-type": "application/json" },
        body: JSON.stringify({ appliesOn, rate }),
      });
      expect(response.status).toBe(201);
    }
    await page.getByRole("link", { name: "FX rates" }).click();
    await page.getByTestId("fx-table").waitFor();
    await page.getByLabel("Rate (KRW/USD)").fill("1483.4");
    await page.getByRole("button", { name: "Save" }).click();
    await page.getByRole("status").or(page.getByRole("alert")).first().waitFor();
    expect(
      await page.getByRole("alert").count(),
      (await page.getByRole("alert").allTextContents()).join(),
    ).toBe(0);
    await poll(() => page.getByTestId("fx-table").textContent()).toContain("1,483.4");
    // One point per day (today's manual rate replaces the seeded one), described for assistive technology.
    // The days are read back rather than counted here: a run across midnight in Seoul seeded yesterday's.
    const history = await fetch(`${harness.url}/admin/fx-rates`, {
      headers: { authorization: `Bearer ${testSecrets.adminToken}` },
    });
    const days = new Set(
      ((await history.json()) as { data: { appliesOn: string }[] }).data.map((rate) => rate.appliesOn),
    );
    expect(days.size).toBeGreaterThanOrEqual(3);
    const chart = page.getByTestId("fx-chart");
    await poll(() => chart.locator(".recharts-line-dot").count()).toBe(days.size);
    expect(await chart.locator("svg title").first().textContent()).toBe("KRW per USD by day");
    expect(await chart.locator("svg desc").first().textContent()).toContain("history table");
    expect(await chart.getByRole("heading").textContent()).toBe("KRW per USD by day");
    await expectAccessible("11-admin-fx");
    await page.getByLabel("Language").selectOption("ko");
    await poll(() => chart.getByRole("heading").textContent()).toBe("일별 원/달러 환율");
    await expectAccessible("11b-admin-fx-ko");
    await page.getByLabel("언어").selectOption("en");
  });

  it("filters the event log by stream and type, showing who did what", async () => {
    await page.getByRole("link", { name: "Event log" }).click();
    await page.getByTestId("events-table").waitFor();
    await page.getByLabel("Stream").fill(`account-user-${userId}`);
    await page.getByLabel("Type").selectOption("CreditToppedUp");
    await page.getByRole("button", { name: "Filter" }).click();
    await poll(() => page.getByTestId("events-table").locator("tbody tr").count()).toBe(2);
    expect(await page.getByTestId("events-table").textContent()).toContain("admin:console");
    await expectAccessible("12-admin-events");
  });

  it("shows the latest signed checkpoint and verifies every hash chain on demand", async () => {
    await page.getByRole("link", { name: "Ledger integrity" }).click();
    await page.getByTestId("checkpoint-table").waitFor();
    expect(await page.getByTestId("check-hashMatches").textContent()).toBe("✓ yes");
    expect(await page.getByTestId("check-signatureValid").textContent()).toBe("✓ yes");
    expect(await page.getByTestId("check-chainsToPrevious").textContent()).toBe("✓ yes");
    expect(await page.getByTestId("checkpoint-table").textContent()).toMatch(/#\d+/);
    await page.getByRole("button", { name: "Verify now" }).click();
    await poll(() => page.getByTestId("verification-result").textContent()).toContain(
      "Intact: every hash chain and checkpoint verifies.",
    );
    await expectAccessible("12b-admin-ledger");
    await page.getByLabel("Language").selectOption("ko");
    await poll(() => page.getByRole("heading", { level: 1 }).textContent()).toBe("원장 무결성");
    expect(await page.getByTestId("check-signatureValid").textContent()).toBe("✓ 예");
    await expectAccessible("12c-admin-ledger-ko");
    await page.getByLabel("언어").selectOption("en");
  });

  it("renders the user pages in Korean with ko-KR won and Seoul dates", async () => {
    await page.getByLabel("Language").selectOption("ko");
    await page.getByRole("link", { name: "사용량 및 청구" }).click();
    await poll(() => page.getByRole("heading", { level: 1 }).textContent()).toBe("사용량 및 청구");
    await page.getByTestId("charge-row").first().waitFor();
    expect(await page.getByTestId("charge-row").first().textContent()).toMatch(/오[전후]/);
    await expectAccessible("13-usage-ko");
    await page.getByRole("link", { name: "개요" }).click();
    await poll(() => page.getByTestId("personal-balance").textContent()).toMatch(/^₩14,9\d\d(\.\d+)?$/);
    await expectAccessible("14-overview-ko");
  });

  it("says in Korean that the gateway could not be reached, and prefixes the server's refusal in Korean", async () => {
    await page.getByRole("link", { name: "API 키" }).click();
    await page.getByTestId("key-row-limited key").waitFor();
    // Given a refusal the server words itself, when a key is issued, then the page says in Korean it was
    // refused and keeps the server's words (they name the field).
    const keysPath = /\/llm\/apis(\?|$)/;
    await page.route(keysPath, (route) =>
      route.request().method() === "POST"
        ? route.fulfill({
            status: 400,
            contentType: "application/json",
            body: JSON.stringify({ status: 100, message: "name: must not be blank" }),
          })
        : route.fallback(),
    );
    await page.getByLabel("이름").fill("refused key");
    await page.getByRole("button", { name: "발급", exact: true }).click();
    await poll(() => page.getByRole("alert").filter({ hasText: "name:" }).textContent()).toBe(
      "게이트웨이가 요청을 받아들이지 않았습니다: name: must not be blank",
    );
    await page.unroute(keysPath);
    // Given no answer at all (the browser's "Failed to fetch"), when the organization's keys are read, then
    // the page says in Korean that the gateway could not be reached.
    await page.route(keysPath, (route) => route.abort("internetdisconnected"));
    await page.getByRole("radio", { name: "조직" }).check();
    await poll(() => page.getByRole("alert").filter({ hasText: "게이트웨이" }).last().textContent()).toBe(
      "게이트웨이에 연결할 수 없습니다. 네트워크 연결을 확인하고 다시 시도하세요.",
    );
    expect(await page.evaluate<string>("document.body.innerText")).not.toContain("Failed to fetch");
    await page.unroute(keysPath);
    await page.getByRole("radio", { name: "개인" }).check();
  });

  it("would notice an inaccessible page (the axe check is not vacuous)", async () => {
    await page.setContent(
      '<html lang="en"><head><title>t</title></head><body><main><input></main></body></html>',
    );
    expect((await seriousAccessibilityViolations(page)).join("\n")).toContain("label");
  });
});
