import type { Page } from "playwright-core";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type GatewayHarness, startGatewayHarness } from "../support/gateway-harness";
import { type Browser, launchBrowser, screenshot, seriousAccessibilityViolations } from "./support/browser";
import { type OpenIdProvider, startOpenIdProvider } from "./support/openid-provider";

/**
 * Console sign-in by OpenID Connect (issue 42, item 1), in Chromium against a real provider in-process
 * (oidc-provider): the console's button, the provider's login and consent, back to the console signed in as
 * the user its claims name (user id from OIDC_USER_CLAIM, organization, the claimed role carried). Refused,
 * each with a page saying why: a callback whose `state` is not this sign-in's, an ID token expired or signed
 * by a key that is not the provider's, and a person the user claim does not name.
 */

let provider: OpenIdProvider;
let harness: GatewayHarness;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  provider = await startOpenIdProvider({
    mina: { claims: { name: "Mina", employee_id: "E-1001", org_id: "acme", org_role: "admin" } },
    guest: { claims: { name: "A guest", org_id: "acme" } },
  });
  harness = await startGatewayHarness({
    label: "oidc_sign_in",
    service: {
      oidc: {
        issuer: provider.issuer,
        clientId: provider.clientId,
        clientSecret: provider.clientSecret,
        userClaim: "employee_id",
        organizationClaim: "org_id",
        roleClaim: "org_role",
      },
    },
  });
  provider.register(`${harness.url}/console/oidc/callback`);
  browser = await launchBrowser({ locale: "en-US", origin: harness.url });
  page = browser.page;
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await harness?.close();
  await provider?.close();
});

beforeEach(async () => {
  // Every case signs in from nothing: no provider session, no grant remembered, no console cookie.
  await browser.context.clearCookies();
  provider.forgeIdTokens(undefined);
  provider.answerWithState(undefined);
});

/** From the console's sign-in page through the provider's login and consent, back to the gateway. */
async function signInAtProvider(login: string): Promise<void> {
  await page.goto(`${harness.url}/console/`);
  await page.getByRole("button", { name: "Sign in with your organization's account" }).click();
  await page.locator('input[name="login"]').fill(login);
  await page.locator('input[name="password"]').fill("any password");
  await page.getByRole("button", { name: "Sign-in" }).click();
  await page.getByRole("button", { name: "Continue" }).click();
  await page.waitForURL((url) => url.origin === harness.url);
}

async function sessionInPage(): Promise<{ status: number; body: unknown }> {
  return page.evaluate<{ status: number; body: unknown }>(
    `fetch("/console/api/session").then(async (response) => ({ status: response.status, body: await response.json() }))`,
  );
}

async function expectRefusal(reason: string, says: RegExp): Promise<void> {
  await page.waitForURL((url) => url.pathname === "/console/oidc/callback");
  const warning = page.locator("[data-reason]");
  expect(await warning.getAttribute("data-reason")).toBe(reason);
  expect(await warning.textContent()).toMatch(says);
  expect(await page.getByRole("heading", { name: "Sign-in refused" }).isVisible()).toBe(true);
  expect(await page.getByRole("link", { name: "Back to sign-in" }).getAttribute("href")).toBe("/console/");
  const html = await page.content();
  expect(html).not.toMatch(/at .+\.(ts|js):\d+|client-secret|eyJ/);
  expect((await sessionInPage()).status).toBe(401);
}

describe("signing in to the console by OpenID Connect", () => {
  it("signs the provider's user in to the console, as the claims name them", async () => {
    await signInAtProvider("mina");
    await page.getByTestId("signed-in-as").waitFor();
    expect(await page.getByTestId("signed-in-as").textContent()).toContain("E-1001");
    expect(await page.getByTestId("signed-in-as").textContent()).toContain("acme");
    const session = await sessionInPage();
    expect(session.status).toBe(200);
    expect(session.body).toMatchObject({ userId: "E-1001", organizationId: "acme", providerRole: "admin" });
    // The transaction cookie served its one callback and is gone.
    const cookies = await browser.context.cookies(harness.url);
    expect(cookies.map((cookie) => cookie.name)).not.toContain("oidc_sign_in");
    expect(cookies.find((cookie) => cookie.name === "session")?.httpOnly).toBe(true);
    await screenshot(page, "oidc-signed-in");
  });

  it("offers the button on the sign-in page, which stays accessible", async () => {
    await page.goto(`${harness.url}/console/`);
    await page.getByRole("button", { name: "Sign in with your organization's account" }).waitFor();
    expect(await page.getByLabel("Session token").isVisible()).toBe(true);
    expect(await seriousAccessibilityViolations(page)).toEqual([]);
  });

  it("fits the sign-in page with its button at 390 px and 1366 px, in English and Korean", async () => {
    const buttonNames = {
      en: "Sign in with your organization's account",
      ko: "조직 계정으로 로그인",
    } as const;
    await page.context().clearCookies();
    for (const language of ["en", "ko"] as const) {
      for (const width of [390, 1366]) {
        await page.setViewportSize({ width, height: 844 });
        await page.goto(`${harness.url}/console/`);
        await page.evaluate(`window.localStorage.setItem("won-console.language", "${language}")`);
        await page.reload();
        const button = page.getByRole("button", { name: buttonNames[language] });
        await button.waitFor();
        const box = (await button.boundingBox())!;
        expect(box.x + box.width, `${language} ${width}`).toBeLessThanOrEqual(width);
        expect(
          await page.evaluate<number>("document.documentElement.scrollWidth"),
          `${language} ${width}`,
        ).toBeLessThanOrEqual(width);
        await screenshot(page, `oidc-sign-in-${language}-${width}`, { fullPage: false });
      }
    }
    await page.evaluate(`window.localStorage.setItem("won-console.language", "en")`);
  });

  it("refuses a callback whose state is not this sign-in's", async () => {
    // The provider's answer comes back carrying another state, as a forged or replayed callback would.
    provider.answerWithState("forged-state");
    await signInAtProvider("mina");
    await expectRefusal("state-mismatch", /state that does not match/);
    await screenshot(page, "oidc-refused-state");
    expect(await seriousAccessibilityViolations(page)).toEqual([]);
  });

  it("refuses an expired ID token", async () => {
    provider.forgeIdTokens("expired");
    await signInAtProvider("mina");
    await expectRefusal("id-token-expired", /ID token has expired/);
  });

  it("refuses an ID token signed by a key that is not the provider's", async () => {
    provider.forgeIdTokens("foreign-key");
    await signInAtProvider("mina");
    await expectRefusal("id-token-signature", /not signed by the identity provider's keys/);
  });

  it("refuses a person the user claim does not name", async () => {
    await signInAtProvider("guest");
    await expectRefusal("user-claim-missing", /user claim is missing/);
    expect(await page.locator("code").textContent()).toBe("employee_id");
  });

  it("refuses a callback no sign-in started, in Korean for a Korean browser", async () => {
    const response = await fetch(`${harness.url}/console/oidc/callback?code=abc&state=xyz`, {
      headers: { "accept-language": "ko-KR,ko;q=0.9" },
    });
    expect(response.status).toBe(400);
    expect(response.headers.get("content-type")).toMatch(/text\/html/);
    const html = await response.text();
    expect(html).toContain('data-reason="transaction-missing"');
    expect(html).toContain("로그인 거부됨");
  });
});
