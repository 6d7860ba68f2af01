import { randomUUID } from "node:crypto";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { monthlyStatementsProjection } from "../../projections/monthly-statements";
import type { MonthlyStatement } from "../../src/billing/statements/monthly-statement";
import { seoulDateOf } from "../../src/kernel/seoul-calendar";
import { demoCreditReference } from "../../src/kernel/system-texts";
import { type GatewayHarness, startGatewayHarness, testSecrets } from "../support/gateway-harness";
import { type Browser, launchBrowser, screenshot } from "./support/browser";
import { patienceMs, poll } from "./support/patient";

/**
 * What a newcomer met in the console (issue 41, items 6 and 8), in Chromium at a phone's 390 px and a laptop's
 * 1366 px, Korean and English: the statement pages fit the phone with their buttons on screen and every amount
 * inside its card; keys are named beside their ids (a replaced playground key too); a wrong admin token is
 * said to be wrong; no page logs a 401 for the admin session it does not need; won reads grouped, and what
 * the server wrote itself reads in the page's language.
 */

const userId = "yuna";
const phone = { width: 390, height: 844 };
const laptop = { width: 1366, height: 768 };
const languages = ["en", "ko"] as const;

let harness: GatewayHarness;
let browser: Browser;
let page: Page;
let sessionToken = "";
let statement: MonthlyStatement;
let namedKeyId = "";
let replacedPlaygroundKeyId = "";
const unauthorized: string[] = [];

async function api(method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
  const response = await fetch(`${harness.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${sessionToken}`, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  if (response.status >= 300) throw new Error(`${path}: ${response.status} ${await response.text()}`);
  return (await response.json()) as Record<string, unknown>;
}

async function chat(key: string): Promise<void> {
  await harness.openai(key, { maxRetries: 3 }).chat.completions.create({
    model: "alpha-5.4-mini",
    messages: [{ role: "user", content: "a charge for the statement" }],
  });
}

async function givenAStatementWithTwoKeys(): Promise<void> {
  const account = { kind: "user", id: userId } as const;
  // The demo credit as the first start writes it: a server-made reference.
  const appended = await harness.service.ledger.store.append({
    streamId: `account-user-${userId}`,
    expectedVersion: "any",
    events: [
      {
        eventId: randomUUID(),
        event: {
          type: "CreditToppedUp",
          data: { account, amountWon: "10000", reference: demoCreditReference },
          metadata: { actor: "system:first-start", occurredAt: new Date().toISOString() },
        },
      },
    ],
  });
  await harness.service.waiter.waitFor(appended.position, [monthlyStatementsProjection.name], patienceMs);
  sessionToken = await harness.session(userId);
  const named = await harness.issueKey(sessionToken, { name: "nightly batch" });
  namedKeyId = named.uuid;
  await chat(named.key);
  // The playground's key, charged, then replaced (deleted) when the playground opens again.
  const first = await api("POST", "/llm/playground/key", {});
  replacedPlaygroundKeyId = first.uuid as string;
  await chat(first.key as string);
  await api("POST", "/llm/playground/key", {});
  const month = seoulDateOf(new Date()).slice(0, "YYYY-MM".length);
  for (let attempt = 0; attempt < patienceMs / 100; attempt++) {
    statement = (await api("GET", `/llm/statements?account=personal&month=${month}`)) as never;
    if (statement.chargeCount === 2) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  expect(statement.chargeCount).toBe(2);
}

beforeAll(async () => {
  harness = await startGatewayHarness({
    label: "newcomer_console",
    billing: {},
    service: { adminToken: testSecrets.adminToken },
  });
  await givenAStatementWithTwoKeys();
  browser = await launchBrowser({ locale: "en-US", origin: harness.url });
  page = browser.page;
  page.setDefaultTimeout(patienceMs);
  page.on("response", (response) => {
    if (response.status() === 401) unauthorized.push(new URL(response.url()).pathname);
  });
  page.on("console", (message) => {
    if (message.type() === "error" && message.text().includes("401")) unauthorized.push(message.text());
  });
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await harness?.close();
});

async function setLanguage(language: "ko" | "en"): Promise<void> {
  await page.evaluate(`window.localStorage.setItem("won-console.language", "${language}")`);
}

async function open(path: string): Promise<void> {
  await page.goto(`${harness.url}/console${path}`);
  await poll(async () => ((await page.locator("h1").first().textContent()) ?? "").length).toBeGreaterThan(0);
  await page.waitForLoadState("networkidle");
}

/** Amounts whose text reaches past the right edge of their card, and the page's width. */
async function layoutAt(): Promise<{ pageWidth: number; spilled: string[] }> {
  return page.evaluate(`(() => {
    const spilled = [];
    for (const element of document.querySelectorAll(".card .amount, .card .figure, .card td.number")) {
      if (element.closest(".table-scroll")) continue;
      const card = element.closest(".card").getBoundingClientRect();
      const range = document.createRange();
      range.selectNodeContents(element);
      const text = range.getBoundingClientRect();
      if (text.right > card.right + 0.5 || text.left < card.left - 0.5) spilled.push(element.textContent);
    }
    return { pageWidth: document.documentElement.scrollWidth, spilled };
  })()`);
}

/** The statement page's own controls, each wholly on the screen. */
async function controlsOffScreen(width: number): Promise<string[]> {
  const offScreen: string[] = [];
  for (const control of [
    page.getByRole("button", { name: /Print|인쇄/ }),
    page.getByRole("button", { name: /Download CSV|CSV 다운로드/ }),
    page.getByRole("button", { name: /^(Show|보기)$/ }),
  ]) {
    const box = await control.boundingBox();
    if (box === null || box.x < 0 || box.x + box.width > width)
      offScreen.push(String(await control.textContent()));
  }
  return offScreen;
}

async function expectStatementFits(name: string): Promise<void> {
  await page.getByTestId("statement").waitFor();
  for (const width of [phone.width, laptop.width]) {
    await page.setViewportSize(width === phone.width ? phone : laptop);
    // The page lays itself out again after a resize, not with it: polled until it fits, and shown as it
    // stands if it never does.
    await poll(async () => {
      const layout = await layoutAt();
      return {
        widthPastScreen: Math.max(0, layout.pageWidth - width),
        spilled: layout.spilled,
        offScreen: await controlsOffScreen(width),
      };
    }, `${name} at ${width} px`).toEqual({ widthPastScreen: 0, spilled: [], offScreen: [] });
    await screenshot(page, `${name}-${width}`, { fullPage: width === phone.width });
  }
}

async function signIn(): Promise<void> {
  await page.goto(`${harness.url}/console/`);
  await page.locator("input[name=token]").fill(sessionToken);
  await page.locator("form button[type=submit]").click();
  await page.getByTestId("personal-balance").waitFor();
}

describe("the console for a newcomer, at 390 px and 1366 px, in Korean and English", {
  timeout: 240_000,
}, () => {
  it("fits the statements page on a phone, its buttons and amounts on screen", async () => {
    await signIn();
    for (const language of languages) {
      await setLanguage(language);
      await open("/statements");
      await expectStatementFits(`newcomer-statements-${language}`);
    }
  });

  it("names each key beside its id in the statement and the usage table, a replaced playground key too", async () => {
    for (const [language, playground] of [
      ["en", "Console playground"],
      ["ko", "콘솔 플레이그라운드"],
    ] as const) {
      await setLanguage(language);
      await open("/statements");
      const byKey = page.getByTestId("statement-by-key");
      await byKey.waitFor();
      const rowOf = (keyId: string) => byKey.locator("tbody tr", { hasText: keyId });
      expect(await rowOf(namedKeyId).locator("td").first().textContent()).toBe(`nightly batch${namedKeyId}`);
      expect(await rowOf(replacedPlaygroundKeyId).locator("td").first().textContent()).toBe(
        `${playground}${replacedPlaygroundKeyId}`,
      );
      await open("/usage");
      await poll(() => page.getByTestId("charge-key").allTextContents()).toEqual(
        expect.arrayContaining([
          `nightly batch · ${namedKeyId.slice(0, 8)}`,
          `${playground} · ${replacedPlaygroundKeyId.slice(0, 8)}`,
        ]),
      );
    }
  });

  it("reads won grouped, and what the server wrote itself in the page's language", async () => {
    for (const [language, reference] of [
      ["en", demoCreditReference],
      ["ko", "첫 시작 때 받은 데모 크레딧"],
    ] as const) {
      await setLanguage(language);
      await open("/statements");
      await page.getByTestId("statement-top-ups").waitFor();
      expect(await page.getByTestId("statement-top-ups").locator("tbody td").nth(1).textContent()).toBe(
        reference,
      );
      expect(await page.getByTestId("statement-topUps").textContent()).toBe("₩10,000.000000");
      await open("/");
      expect(await page.getByTestId("personal-balance").textContent()).toMatch(/^₩9,9\d\d(\.\d\d?)?$/);
    }
  });

  it("asks for the admin session on no page of a user who is not an admin: no 401 in the browser", async () => {
    unauthorized.length = 0;
    for (const language of languages) {
      await setLanguage(language);
      for (const path of ["/", "/keys", "/usage", "/activity", "/models", "/playground", "/statements"]) {
        await open(path);
      }
    }
    expect(unauthorized).toEqual([]);
  });

  it("says a wrong admin token was not accepted, in the page's language", async () => {
    for (const [language, expected] of [
      ["en", "The admin token was not accepted."],
      ["ko", "관리자 토큰이 맞지 않습니다."],
    ] as const) {
      await setLanguage(language);
      await open("/admin/statements");
      await page.locator("input[name=adminToken]").fill("not-the-admin-token");
      await page.locator("form button[type=submit]").click();
      const alert = page.getByRole("alert");
      await alert.waitFor();
      expect(await alert.textContent()).toContain(expected);
      expect(await alert.textContent()).not.toContain("Admin token required");
    }
  });

  it("fits finance's account statements on a phone, in both languages", async () => {
    await setLanguage("en");
    await open("/admin/statements");
    await page.locator("input[name=adminToken]").fill(testSecrets.adminToken);
    await page.locator("form button[type=submit]").click();
    for (const language of languages) {
      await setLanguage(language);
      await open("/admin/statements");
      await page.locator("input[name=id]").fill(userId);
      await page.locator("form[aria-label] button[type=submit]").click();
      await expectStatementFits(`newcomer-admin-statements-${language}`);
    }
  });
});
