import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sessionLimits } from "../../src/kernel/limits";
import { type GatewayHarness, startGatewayHarness, testSecrets } from "../support/gateway-harness";
import { servedOperations } from "../support/served-operations";
import { type Browser, launchBrowser, screenshot } from "./support/browser";
import { patienceMs, poll, topUp } from "./support/patient";
import { appendCharges } from "./support/seeded-charges";

/**
 * The console's layout at a laptop's 1366 px and a phone's 390 px, in Korean and English: no page scrolls
 * sideways on the phone, the header is one band on the laptop, nav words stay whole; admin links only for an
 * admin; "signed in as" once; inline top-up validation, and a top-up's id as long as the server takes; the bank
 * refresh only with a bank key; /docs without markdown backticks.
 */

const userId = "mina";
const organizationId = "acme";
const phone = { width: 390, height: 844 };
const laptop = { width: 1366, height: 768 };
const userPages = ["/", "/keys", "/usage", "/activity", "/models", "/playground", "/webhooks"] as const;
const adminPages = [
  "/admin/accounts",
  "/admin/pricing",
  "/admin/fx",
  "/admin/events",
  "/admin/ledger",
  "/admin/upstreams",
] as const;

let harness: GatewayHarness;
const operations = servedOperations();
let browser: Browser;
let page: Page;
let sessionToken = "";

beforeAll(async () => {
  harness = await startGatewayHarness({
    label: "console_layout",
    billing: {},
    service: {
      adminToken: testSecrets.adminToken,
      // The operations routes serve /docs.
      operationsRouter: operations.router,
    },
  });
  await topUp(harness, { kind: "user", id: userId }, "10000");
  sessionToken = await harness.session(userId, organizationId);
  const key = await harness.issueKey(sessionToken, { name: "layout key" });
  await appendCharges(harness, {
    account: { kind: "user", id: userId },
    keyId: key.uuid,
    count: 60,
    newestStartMs: Date.now() - 60_000,
    spacingMs: 6 * 3_600_000,
  });
  browser = await launchBrowser({ locale: "en-US", origin: harness.url });
  page = browser.page;
  page.setDefaultTimeout(patienceMs);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await operations.close();
  await harness?.close();
});

async function open(path: string): Promise<void> {
  await page.goto(`${harness.url}/console${path}`);
  await poll(async () => ((await page.locator("h1").first().textContent()) ?? "").length).toBeGreaterThan(0);
  // Charts and tables arrive after the heading; measure once the page has settled.
  await page.waitForLoadState("networkidle");
}

const pageWidth = () => page.evaluate<number>("document.documentElement.scrollWidth");

async function setLanguage(language: "ko" | "en"): Promise<void> {
  await page.evaluate(`window.localStorage.setItem("won-console.language", "${language}")`);
}

/** At 390 px the page settles within the screen's width: charts re-render after a resize, not with it. */
async function expectNoSidewaysScroll(name: string): Promise<void> {
  await page.setViewportSize(phone);
  await poll(pageWidth, `${name} at 390 px`).toBeLessThanOrEqual(phone.width);
  await screenshot(page, `${name}-390`, { fullPage: false });
}

/** The header at 1366 px: the brand and the language picker on one line, every nav link on one line. */
async function expectOneHeaderBand(name: string): Promise<void> {
  await page.setViewportSize(laptop);
  // The page lays itself out again after a resize, not with it: the header settles into one band.
  await poll(
    async () => (await page.locator("header").boundingBox())?.height,
    `${name} header at 1366 px`,
  ).toBeLessThan(64);
  await screenshot(page, `${name}-1366`);
  const brand = (await page.locator("header .brand").boundingBox())!;
  const picker = (await page.locator("header select").boundingBox())!;
  const header = (await page.locator("header").boundingBox())!;
  expect(Math.abs(picker.y + picker.height / 2 - (brand.y + brand.height / 2)), name).toBeLessThan(8);
  expect(header.height, name).toBeLessThan(64);
  const linesPerLink = await page.evaluate<number[]>(
    `[...document.querySelectorAll("header nav a, nav.subnav a")].map((link) => link.getClientRects().length)`,
  );
  expect(
    linesPerLink.every((lines) => lines === 1),
    name,
  ).toBe(true);
}

describe("the console at 1366 px and 390 px, in Korean and English", { timeout: 180_000 }, () => {
  it("fits the sign-in page on a phone, and points operators to the admin sign-in", async () => {
    for (const language of ["en", "ko"] as const) {
      await page.goto(`${harness.url}/console/`);
      await setLanguage(language);
      await open("/");
      await expectNoSidewaysScroll(`layout-sign-in-${language}`);
      await expectOneHeaderBand(`layout-sign-in-${language}`);
    }
    expect(await page.getByRole("link", { name: "운영자: 관리자 로그인" }).count()).toBe(1);
  });

  it("shows a user no admin links, and who is signed in once", async () => {
    await setLanguage("en");
    await open("/");
    await page.getByLabel("Session token").fill(sessionToken);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByTestId("personal-balance").waitFor();
    expect(await page.getByRole("navigation", { name: "Admin & finance" }).count()).toBe(0);
    expect(await page.getByRole("link", { name: "Accounts" }).count()).toBe(0);
    expect(await page.getByRole("link", { name: "Admin", exact: true }).count()).toBe(0);
    const text = await page.evaluate<string>("document.body.innerText");
    expect(text.split("Signed in as").length - 1).toBe(1);
    expect(await page.getByTestId("signed-in-as").textContent()).toBe(
      `Signed in as ${userId} · Organization ${organizationId}`,
    );
  });

  it("fits every user page on a phone and keeps one header band on a laptop, in both languages", async () => {
    for (const language of ["en", "ko"] as const) {
      await setLanguage(language);
      for (const path of userPages) {
        const name = `layout-${language}${path === "/" ? "-overview" : path.replaceAll("/", "-")}`;
        await open(path);
        await expectNoSidewaysScroll(name);
        await expectOneHeaderBand(name);
      }
    }
  });

  it("shows an admin the admin links, and fits every admin page on a phone in both languages", async () => {
    await setLanguage("en");
    await open("/admin/accounts");
    await page.getByLabel("Admin token").fill(testSecrets.adminToken);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByTestId("accounts-table").waitFor();
    await page.getByRole("navigation", { name: "Admin & finance" }).waitFor();
    // One "Admin" link in the header, current on admin pages; the admin pages' own links below it.
    expect(
      await page
        .getByRole("banner")
        .getByRole("link", { name: "Admin", exact: true })
        .getAttribute("aria-current"),
    ).toBe("page");
    for (const language of ["en", "ko"] as const) {
      await setLanguage(language);
      // The user pages were measured above; with the Admin link the header is longest on any page.
      for (const path of ["/", ...adminPages]) {
        const name = `layout-admin-${language}${path === "/" ? "-overview" : path.replaceAll("/", "-")}`;
        await open(path);
        await expectNoSidewaysScroll(name);
        await expectOneHeaderBand(name);
      }
    }
  });

  it("keeps Korean nav words whole", async () => {
    await setLanguage("ko");
    await open("/admin/pricing");
    await page.setViewportSize(phone);
    const navLinks = `[...document.querySelectorAll("header nav a, nav.subnav a")]`;
    const wordBreaks = await page.evaluate<string[]>(
      `${navLinks}.map((link) => getComputedStyle(link).wordBreak)`,
    );
    // The header's links and the admin pages' tabs, statements, upstreams and webhooks included.
    expect(wordBreaks.length).toBe(16);
    expect(new Set(wordBreaks)).toEqual(new Set(["keep-all"]));
    const linesPerLink = await page.evaluate<number[]>(
      `${navLinks}.map((link) => link.getClientRects().length)`,
    );
    expect(linesPerLink.every((lines) => lines === 1)).toBe(true);
  });

  it("says inline what is wrong with a top-up amount, and clears a success once the form changes", async () => {
    await setLanguage("en");
    await open("/admin/accounts");
    await page.setViewportSize(laptop);
    const form = page.getByRole("region", { name: "Top up" });
    await form.getByLabel("Id", { exact: true }).fill(userId);
    await form.getByLabel("Reference").fill("layout test");
    for (const amount of ["12.345", "0", "-5", "five"]) {
      await form.getByLabel("Amount (won)").fill(amount);
      await form.getByRole("button", { name: "Top up" }).click();
      await poll(() => form.getByRole("alert").textContent()).toContain("above 0 with at most two decimals");
      expect(await form.getByLabel("Amount (won)").getAttribute("aria-invalid"), amount).toBe("true");
    }
    await form.getByLabel("Amount (won)").fill("1500");
    expect(await form.getByRole("alert").count()).toBe(0);
    await form.getByRole("button", { name: "Top up" }).click();
    await page.getByTestId("top-up-result").waitFor();
    await screenshot(page, "layout-top-up-success");
    await form.getByLabel("Amount (won)").fill("9");
    expect(await page.getByTestId("top-up-result").count()).toBe(0);
  });

  it("given an account id as long as the server allows, then the top-up funds that account, not the one its first 200 characters name", async () => {
    const longId = `long-${"d".repeat(sessionLimits.accountIdLengthMax - 5)}`;
    await setLanguage("en");
    await open("/admin/accounts");
    const form = page.getByRole("region", { name: "Top up" });
    await form.getByLabel("Id", { exact: true }).fill(longId);
    expect(await form.getByLabel("Id", { exact: true }).inputValue()).toBe(longId);
    await form.getByLabel("Reference").fill("long id");
    await form.getByLabel("Amount (won)").fill("700");
    await form.getByRole("button", { name: "Top up" }).click();
    await page.getByTestId("top-up-result").waitFor();
    const funded = await fetch(`${harness.url}/admin/accounts/user/${longId}`, {
      headers: { authorization: `Bearer ${testSecrets.adminToken}` },
    });
    expect(((await funded.json()) as { balanceWon: string }).balanceWon).toBe("700");
  });

  it("offers no bank refresh when the gateway has no bank key", async () => {
    await open("/admin/fx");
    await page.getByTestId("fx-table").waitFor();
    expect(await page.getByRole("button", { name: "Refresh from the bank now" }).count()).toBe(0);
  });

  it("wraps a long name without spaces inside the key dialogs on a phone", async () => {
    const longName = "y".repeat(200);
    await harness.issueKey(sessionToken, { name: longName });
    await setLanguage("en");
    await open("/keys");
    await page.setViewportSize(phone);
    const row = page.getByTestId(`key-row-${longName}`);
    const overflowOf = (selector: string) =>
      page.evaluate<{ text: number; dialog: number; dialogScroll: number }>(
        `(() => {
          const dialog = document.querySelector("dialog[open]");
          const text = dialog.querySelector(${JSON.stringify(selector)});
          return { text: text.scrollWidth, dialog: dialog.clientWidth, dialogScroll: dialog.scrollWidth };
        })()`,
      );
    for (const [button, selector] of [
      ["Delete", "p"],
      ["Set limits", "h2"],
    ] as const) {
      await row.getByRole("button", { name: new RegExp(`^${button}`) }).click();
      await page.locator("dialog[open]").waitFor();
      await screenshot(page, `layout-long-name-${button.replace(" ", "-").toLowerCase()}-390`, {
        fullPage: false,
      });
      const sizes = await overflowOf(selector);
      expect(sizes.text, button).toBeLessThanOrEqual(sizes.dialog);
      expect(sizes.dialogScroll, button).toBeLessThanOrEqual(sizes.dialog);
      expect(await pageWidth(), button).toBeLessThanOrEqual(phone.width);
      await page.getByRole("dialog").getByRole("button", { name: "Cancel" }).click();
      await page.locator("dialog[open]").waitFor({ state: "detached" });
    }
  });

  it("keeps the usage charts' plots whole under a legend of many keys with long names", async () => {
    const names = Array.from({ length: 12 }, (_unused, index) => `team-${index}-${"q".repeat(80)}`);
    for (const name of names) {
      const { key } = await harness.issueKey(sessionToken, { name });
      await harness.openai(key).chat.completions.create({
        model: "alpha-5.4-mini",
        messages: [{ role: "user", content: "legend" }],
      });
    }
    await setLanguage("en");
    const legend = page.getByTestId("chart-won").getByRole("listitem");
    await poll(async () => {
      await open("/usage");
      await page.getByLabel("Group by").selectOption("key");
      return legend.count();
    }).toBeGreaterThanOrEqual(names.length + 1);
    // A plot squeezed to nothing has no grid at all.
    const plotHeight = async (chart: string) => {
      const grid = page.getByTestId(chart).locator(".recharts-cartesian-grid");
      return (await grid.count()) === 0 ? 0 : (await grid.boundingBox())!.height;
    };
    for (const viewport of [phone, laptop]) {
      // The charts re-render after a resize, not with it: each settles to its size.
      await page.setViewportSize(viewport);
      for (const chart of ["chart-won", "chart-tokens"])
        await poll(() => plotHeight(chart), `${chart} at ${viewport.width} px`).toBeGreaterThan(150);
      await poll(pageWidth, `usage at ${viewport.width} px`).toBeLessThanOrEqual(viewport.width);
      await screenshot(page, `layout-usage-legend-${viewport.width}`);
    }
    // The whole name is each legend item's title; what shows is cut short.
    const titles = await Promise.all((await legend.all()).map((item) => item.getAttribute("title")));
    for (const name of names) {
      expect(
        titles.some((title) => title?.startsWith(`${name} · `)),
        name,
      ).toBe(true);
    }
  });

  it("shows /docs with names as code, not markdown backticks", async () => {
    await page.goto(`${harness.url}/docs`);
    await poll(() => page.locator("details.operation").count()).toBeGreaterThan(20);
    const text = await page.evaluate<string>(
      `(() => { for (const details of document.querySelectorAll("details")) details.open = true; return document.body.innerText; })()`,
    );
    // Backticks left are inside JSON schemas (<pre>), which show the document as it is.
    const prose = await page.evaluate<string>(
      `[...document.querySelectorAll("#description, h2 + p, summary")].map((node) => node.innerText).join("\\n")`,
    );
    expect(text.length).toBeGreaterThan(1_000);
    expect(prose).not.toContain("`");
    expect(await page.locator("summary code, #description code, h2 + p code").count()).toBeGreaterThan(20);
  });
});
