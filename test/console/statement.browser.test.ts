import { randomUUID } from "node:crypto";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { formatMicroWon } from "../../console/src/lib/format";
import { monthlyStatementsProjection } from "../../projections/monthly-statements";
import type { MonthlyStatement } from "../../src/billing/statements/monthly-statement";
import { seoulDateOf } from "../../src/kernel/seoul-calendar";
import { LedgerSigningKey } from "../../src/ledger/integrity/ledger-signing-key";
import { type GatewayHarness, startGatewayHarness, testSecrets } from "../support/gateway-harness";
import {
  artifactsDirectory,
  type Browser,
  launchBrowser,
  screenshot,
  seriousAccessibilityViolations,
} from "./support/browser";
import { patienceMs, poll } from "./support/patient";

/**
 * The monthly statement page in Debian's Chromium, Korean then English: the figures the API gives, and a
 * print to PDF by Chromium itself that is the document alone — no console chrome, nothing wider than an A4
 * page, no table row split across pages — over more than one page.
 */

const userId = "statement-reader";
const ledgerSigningKey = LedgerSigningKey.parse(Buffer.alloc(32, 8).toString("base64"));
const topUpCount = 60;
/** A4 less the statement's 12 mm margins on either side, in CSS pixels (96 per inch). */
const printableWidthPx = Math.floor(((210 - 2 * 12) / 25.4) * 96);

let harness: GatewayHarness;
let browser: Browser;
let page: Page;
let sessionToken = "";
let statement: MonthlyStatement;

async function statementFromApi(): Promise<MonthlyStatement> {
  const month = seoulDateOf(new Date()).slice(0, "YYYY-MM".length);
  const response = await fetch(`${harness.url}/llm/statements?account=personal&month=${month}`, {
    headers: { authorization: `Bearer ${sessionToken}` },
  });
  if (response.status !== 200) throw new Error(`statement: ${response.status} ${await response.text()}`);
  return (await response.json()) as MonthlyStatement;
}

/** Under print media at the printable width: what the PDF will lay out. */
async function printLayout(): Promise<{
  chromeShown: string[];
  overflowPx: number;
  widestTablePx: number;
  rowsThatMaySplit: number;
}> {
  await page.emulateMedia({ media: "print" });
  await page.setViewportSize({ width: printableWidthPx, height: 1_000 });
  return page.evaluate(`(() => {
    const shown = (selector) => [...document.querySelectorAll(selector)]
      .filter((element) => getComputedStyle(element).display !== "none").map(() => selector);
    return {
      chromeShown: [...shown("header"), ...shown(".no-print"), ...shown("main > .row.spread")],
      overflowPx: document.documentElement.scrollWidth - document.documentElement.clientWidth,
      widestTablePx: Math.max(...[...document.querySelectorAll("[data-testid=statement] table")]
        .map((table) => table.getBoundingClientRect().right)),
      rowsThatMaySplit: [...document.querySelectorAll("[data-testid=statement] tr")]
        .filter((row) => getComputedStyle(row).breakInside !== "avoid").length,
    };
  })()`);
}

async function printToPdf(name: string): Promise<{ pages: number; bytes: number }> {
  const pdf = await page.pdf({ format: "A4", printBackground: true, preferCSSPageSize: true });
  await mkdir(artifactsDirectory, { recursive: true });
  await writeFile(path.join(artifactsDirectory, `${name}.pdf`), pdf);
  await page.emulateMedia({ media: "screen" });
  await page.setViewportSize({ width: 1280, height: 900 });
  const text = pdf.toString("latin1");
  expect(text.startsWith("%PDF-")).toBe(true);
  return { pages: text.match(/\/Type\s*\/Page(?![s\w])/g)?.length ?? 0, bytes: pdf.length };
}

beforeAll(async () => {
  harness = await startGatewayHarness({
    label: "statement_browser",
    billing: {},
    service: { adminToken: testSecrets.adminToken, ledgerSigningKey },
  });
  const account = { kind: "user", id: userId } as const;
  const appended = await harness.service.ledger.store.append({
    streamId: `account-user-${userId}`,
    expectedVersion: "any",
    events: Array.from({ length: topUpCount }, (_, index) => ({
      eventId: randomUUID(),
      event: {
        type: "CreditToppedUp" as const,
        data: { account, amountWon: "100", reference: `top-up ${index + 1} / 충전` },
        metadata: { actor: "admin", occurredAt: new Date().toISOString() },
      },
    })),
  });
  await harness.service.waiter.waitFor(appended.position, [monthlyStatementsProjection.name], patienceMs);
  sessionToken = await harness.session(userId);
  const { key } = await harness.issueKey(sessionToken);
  // Retried: under the suite's load a hold may time out (503), which a client retries.
  await harness.openai(key, { maxRetries: 3 }).chat.completions.create({
    model: "alpha-5.4-mini",
    messages: [{ role: "user", content: "one charge for the statement" }],
  });
  // The charge is posted by the billing workers, and sealed by the checkpointer: wait for the statement to
  // count it and name its checkpoint, so that every later read of the statement, page or API, is this one.
  for (let attempt = 0; attempt < patienceMs / 100; attempt++) {
    statement = await statementFromApi();
    if (statement.chargeCount === 1 && statement.checkpoint !== null) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  expect(statement.chargeCount).toBe(1);
  expect(statement.checkpoint).not.toBeNull();
  browser = await launchBrowser({ locale: "ko-KR", origin: harness.url });
  page = browser.page;
  page.setDefaultTimeout(patienceMs);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await harness?.close();
});

describe("the statement page in Chromium", { timeout: 120_000 }, () => {
  it("shows the month's statement in Korean, as the API states it", async () => {
    await page.goto(`${harness.url}/console/`);
    await page.getByLabel("세션 토큰").fill(sessionToken);
    await page.getByRole("button", { name: "로그인" }).click();
    await page.getByRole("link", { name: "월별 명세서" }).click();
    await page.getByTestId("statement").waitFor();

    expect(await page.getByRole("heading", { level: 1 }).textContent()).toBe("월별 명세서");
    await poll(() => page.getByTestId("statement-topUps").textContent()).toBe(
      formatMicroWon(statement.topUpsWon),
    );
    expect(statement.topUpsWon).toBe("6000");
    expect(await page.getByTestId("statement-charges").textContent()).toBe(
      formatMicroWon(statement.chargesWon),
    );
    expect(await page.getByTestId("statement-closingBalance").textContent()).toBe(
      formatMicroWon(statement.closingBalanceWon),
    );
    expect(await page.getByTestId("statement-status").textContent()).toContain("잠정");
    expect(await page.getByTestId("statement-top-ups").locator("tbody tr").count()).toBe(topUpCount);
    expect(await page.getByTestId("statement-by-model").textContent()).toContain("alpha-5.4-mini");
    expect(await seriousAccessibilityViolations(page)).toEqual([]);
  });

  it("prints the Korean statement to PDF as the document alone, over pages, without a row split", async () => {
    const layout = await printLayout();
    expect(layout).toEqual({
      chromeShown: [],
      overflowPx: 0,
      widestTablePx: expect.any(Number),
      rowsThatMaySplit: 0,
    });
    expect(layout.widestTablePx).toBeLessThanOrEqual(printableWidthPx);
    await screenshot(page, "statement-ko-print");
    const pdf = await printToPdf("statement-ko");
    // Sixty top-up rows do not fit one A4 page; a broken layout (a row per page, or overflow) gives many more.
    expect(pdf.pages).toBeGreaterThanOrEqual(2);
    expect(pdf.pages).toBeLessThanOrEqual(5);
  });

  it("shows and prints the same statement in English", async () => {
    await page.getByLabel("언어").selectOption("en");
    await poll(() => page.getByRole("heading", { level: 1 }).textContent()).toBe("Monthly statement");
    expect(await page.getByTestId("statement-status").textContent()).toContain("Provisional");
    expect(await page.getByTestId("statement-openingBalance").textContent()).toBe(
      formatMicroWon(statement.openingBalanceWon),
    );
    const layout = await printLayout();
    expect(layout.chromeShown).toEqual([]);
    expect(layout.overflowPx).toBe(0);
    expect(layout.rowsThatMaySplit).toBe(0);
    const pdf = await printToPdf("statement-en");
    expect(pdf.pages).toBeGreaterThanOrEqual(2);
    expect(pdf.pages).toBeLessThanOrEqual(5);
  });

  it("shows finance any account's statement, printed the same way", async () => {
    await page.goto(`${harness.url}/console/admin/statements`);
    await page.getByLabel("Admin token").fill(testSecrets.adminToken);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByLabel("Account id").fill(userId);
    await page.getByRole("button", { name: "Show" }).click();
    await page.getByTestId("statement").waitFor();
    expect(await page.getByTestId("statement-closingBalance").textContent()).toBe(
      formatMicroWon(statement.closingBalanceWon),
    );
    expect(await seriousAccessibilityViolations(page)).toEqual([]);
    const layout = await printLayout();
    expect(layout.chromeShown).toEqual([]);
    expect(layout.overflowPx).toBe(0);
    expect((await printToPdf("statement-admin-en")).pages).toBeGreaterThanOrEqual(2);
  });

  it("downloads the statement's CSV as the API writes it, for finance and for the user", async () => {
    const month = seoulDateOf(new Date()).slice(0, "YYYY-MM".length);
    const expected = async (path: string, token: string) =>
      (await fetch(`${harness.url}${path}`, { headers: { authorization: `Bearer ${token}` } })).text();
    const downloaded = async () => {
      const [download] = await Promise.all([
        page.waitForEvent("download"),
        page.getByRole("button", { name: "Download CSV" }).click(),
      ]);
      return { name: download.suggestedFilename(), text: await readFile((await download.path())!, "utf8") };
    };

    const finance = await downloaded();
    expect(finance.text).toBe(
      await expected(`/admin/statements/user/${userId}?month=${month}&format=csv`, testSecrets.adminToken),
    );
    expect(finance.name).toMatch(/\.csv$/);

    await page.goto(`${harness.url}/console/statements`);
    await page.getByTestId("statement").waitFor();
    const own = await downloaded();
    expect(own.text).toBe(
      await expected(`/llm/statements?account=personal&month=${month}&format=csv`, sessionToken),
    );
    expect(own.name).toBe(finance.name);
  });

  it("given the session ended under the statement page, when its CSV is asked for, then the sign-in form says so", async () => {
    await page.goto(`${harness.url}/console/statements`);
    await page.getByTestId("statement").waitFor();
    await browser.context.clearCookies();

    await page.getByRole("button", { name: "Download CSV" }).click();

    await page.getByTestId("session-ended").waitFor();
    expect(await page.getByRole("heading", { level: 1 }).textContent()).toBe("Sign in to the console");
  });
});
