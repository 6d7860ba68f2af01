import type { Page } from "playwright-core";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type GatewayHarness, startGatewayHarness, testSecrets } from "../support/gateway-harness";
import { type Browser, launchBrowser } from "./support/browser";
import { patienceMs, poll } from "./support/patient";

/**
 * A console session ends or changes under an open page: its token expires, its cookie is gone before the
 * user signs out, or another tab signs someone else in (the cookie is the browser's, not the tab's). The
 * page says so and shows what the browser's session is now; it never goes on looking signed in as before.
 * A sign-out the gateway did not record leaves the session live: the page says so and stays signed in.
 */

let harness: GatewayHarness;
let browser: Browser;
let page: Page;
const uncaught: string[] = [];
const sessionLifetimeSeconds = 10;
/** How long the page takes what it read for current (console/src/main.tsx `staleTime`), and a little more. */
const sessionReadFreshMs = 5_500;

beforeAll(async () => {
  harness = await startGatewayHarness({ label: "console_session_lifecycle" });
  browser = await launchBrowser({ locale: "en-US", origin: harness.url });
  page = browser.page;
  page.setDefaultTimeout(patienceMs);
  page.on("pageerror", (error) => uncaught.push(error.message));
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await harness?.close();
});

beforeEach(async () => {
  await browser.context.clearCookies();
  uncaught.length = 0;
});

async function signIn(into: Page, token: string, { goto = true } = {}): Promise<void> {
  if (goto) await into.goto(`${harness.url}/console/`);
  await into.getByLabel("Session token").fill(token);
  await into.getByRole("button", { name: "Sign in", exact: true }).click();
}

function signedInAs(on: Page) {
  return on.getByTestId("signed-in-as");
}

describe("a console session that ends or changes under an open page, in Chromium", {
  timeout: 120_000,
}, () => {
  it("given a session that expires, when the user moves on, then the sign-in form says it ended", async () => {
    // Minted once the form shows, to live long enough to sign in on a loaded machine; the test then waits
    // for its expiry.
    await page.goto(`${harness.url}/console/`);
    await page.getByLabel("Session token").waitFor();
    const { token, expiresAt } = await harness.service.sessions.mint(
      { userId: "hana", organizationId: null },
      sessionLifetimeSeconds,
    );
    await signIn(page, token, { goto: false });
    await signedInAs(page).getByText("hana").waitFor();

    await page.waitForTimeout(Math.max(0, expiresAt.getTime() - Date.now()) + 1_000);
    await page.getByRole("link", { name: "API keys" }).click();

    await page.getByTestId("session-ended").waitFor();
    expect(await page.getByRole("heading", { name: "Sign in to the console" }).isVisible()).toBe(true);
    expect(await signedInAs(page).count()).toBe(0);
    expect(await page.title()).toBe("Sign in to the console · won-gateway console");
    expect(uncaught).toEqual([]);
  });

  it("given an API key pasted for a session token, then the refusal says which credential the console takes", async () => {
    const { key } = await harness.issueKey(await harness.session("kai"));
    await signIn(page, key);

    await page.getByRole("alert").getByText("That is an API key (svc_…)", { exact: false }).waitFor();
    expect(await signedInAs(page).count()).toBe(0);
    await signIn(page, "not a token at all", { goto: false });
    await page.getByRole("alert").getByText("The token was refused.").waitFor();
    expect(uncaught).toEqual([]);
  });

  it("given the cookie already gone, when the user signs out, then the sign-in form shows, with no error", async () => {
    await signIn(page, await harness.session("hana"));
    await signedInAs(page).getByText("hana").waitFor();
    await browser.context.clearCookies();

    await page.getByRole("button", { name: "Sign out" }).click();

    await page.getByRole("heading", { name: "Sign in to the console" }).waitFor();
    expect(await page.getByRole("alert").count()).toBe(0);
    expect(uncaught).toEqual([]);
  });

  it("given the sign-out failing, when the user signs out, then the page says so and stays signed in, and a sign-out that reaches the gateway ends the session", async () => {
    const token = await harness.session("hana");
    const keysStatus = async () =>
      (await fetch(`${harness.url}/llm/apis`, { headers: { authorization: `Bearer ${token}` } })).status;
    await signIn(page, token);
    await signedInAs(page).getByText("hana").waitFor();
    const sessionExchange = (url: URL) => url.pathname === "/console/api/session";
    // Given: the sign-out answered 503 by a proxy, then not reaching the gateway at all
    for (const [failure, said] of [
      ["503", "The gateway could not complete this; try again: Service Unavailable"],
      ["unreachable", "The gateway could not be reached."],
    ] as const) {
      await page.route(sessionExchange, async (route) => {
        if (route.request().method() !== "DELETE") await route.continue();
        else if (failure === "unreachable") await route.abort("connectionfailed");
        else
          await route.fulfill({
            status: 503,
            contentType: "text/html",
            body: "<h1>Service Unavailable</h1>",
          });
      });
      try {
        // When
        await page.getByRole("button", { name: "Sign out" }).click();

        // Then
        const alert = page.getByRole("alert").filter({ hasText: said });
        await alert.waitFor();
        expect(await alert.textContent(), failure).toContain("Sign-out failed: you are still signed in.");
        expect(await signedInAs(page).textContent(), failure).toContain("hana");
        expect(await keysStatus(), failure).toBe(200);
      } finally {
        await page.unroute(sessionExchange);
      }
    }

    await page.getByRole("button", { name: "Sign out" }).click();

    await page.getByRole("heading", { name: "Sign in to the console" }).waitFor();
    expect(await page.getByRole("alert").count()).toBe(0);
    expect(await keysStatus()).toBe(401);
    expect(uncaught).toEqual([]);
  });

  it("given the admin sign-out failing, when the admin signs out, then the page says so and stays signed in, and a sign-out that reaches the gateway ends it", async () => {
    await page.goto(`${harness.url}/console/admin/accounts`);
    await page.getByLabel("Admin token").fill(testSecrets.adminToken);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByText("Signed in as admin").waitFor();
    const adminSessionStatus = async () =>
      (await browser.context.request.get(`${harness.url}/console/api/admin-session`)).status();
    const adminSessionExchange = (url: URL) => url.pathname === "/console/api/admin-session";
    await page.route(adminSessionExchange, async (route) => {
      if (route.request().method() !== "DELETE") await route.continue();
      else
        await route.fulfill({ status: 503, contentType: "text/html", body: "<h1>Service Unavailable</h1>" });
    });
    try {
      await page.getByRole("button", { name: "Sign out" }).click();

      const alert = page.getByRole("alert").filter({ hasText: "Sign-out failed: you are still signed in." });
      await alert.waitFor();
      expect(await alert.textContent()).toContain("The gateway could not complete this");
      expect(await page.getByText("Signed in as admin").isVisible()).toBe(true);
      expect(await adminSessionStatus()).toBe(200);
    } finally {
      await page.unroute(adminSessionExchange);
    }

    await page.getByRole("button", { name: "Sign out" }).click();

    await page.getByRole("heading", { name: "Admin sign-in" }).waitFor();
    expect(await page.getByRole("alert").count()).toBe(0);
    expect(await adminSessionStatus()).toBe(401);
    expect(uncaught).toEqual([]);
  });

  it("given another tab signs someone else in, when this tab writes, then it says so and shows that session", async () => {
    await signIn(page, await harness.session("hana"));
    await page.getByRole("link", { name: "API keys" }).click();
    await signedInAs(page).getByText("hana").waitFor();
    const otherTab = await browser.context.newPage();
    try {
      // The other tab opens signed in as hana (the same cookie), signs out, and signs solo in.
      await otherTab.goto(`${harness.url}/console/`);
      await signedInAs(otherTab).getByText("hana").waitFor();
      await otherTab.getByRole("button", { name: "Sign out" }).click();
      await signIn(otherTab, await harness.session("solo"), { goto: false });
      await signedInAs(otherTab).getByText("solo").waitFor();

      await page.bringToFront();
      await page.getByLabel("Name").fill("from the first tab");
      await page.getByRole("button", { name: "Issue", exact: true }).click();

      await page.getByTestId("session-changed").waitFor();
      await signedInAs(page).getByText("solo").waitFor();
      // The write was refused: no key was issued for either user.
      for (const userId of ["hana", "solo"]) {
        const keys = await fetch(`${harness.url}/llm/apis`, {
          headers: { authorization: `Bearer ${await harness.session(userId)}` },
        });
        expect(((await keys.json()) as { data: unknown[] }).data, userId).toEqual([]);
      }
      // And this tab now writes as the session it shows.
      await page.getByLabel("Name").fill("as solo");
      await page.getByRole("button", { name: "Issue", exact: true }).click();
      await page.getByTestId("new-key-value").waitFor();
      expect(uncaught).toEqual([]);
    } finally {
      await otherTab.close();
    }
  });

  it("given the gateway out of reach while the tab was away, when it is shown again, then the page stays signed in with what was typed", async () => {
    await signIn(page, await harness.session("hana"));
    await page.getByRole("link", { name: "API keys" }).click();
    await page.getByLabel("Name").fill("typed before the outage");
    // Given: every call to the gateway fails, as with a dropped connection, then a 503 from a proxy
    for (const outage of ["unreachable", "503"] as const) {
      await page.waitForTimeout(sessionReadFreshMs);
      let asked = 0;
      await page.route(`${harness.url}/**`, async (route) => {
        asked += 1;
        if (outage === "unreachable") await route.abort("connectionfailed");
        else
          await route.fulfill({
            status: 503,
            contentType: "text/html",
            body: "<h1>Service Unavailable</h1>",
          });
      });

      // When: the tab is shown again, which has the page read its session again
      await page.evaluate("window.dispatchEvent(new Event('visibilitychange'))");
      await poll(() => asked).toBeGreaterThan(0);
      await page.waitForTimeout(300);
      await page.unroute(`${harness.url}/**`);

      // Then
      expect(await page.getByTestId("session-ended").count(), outage).toBe(0);
      expect(await page.getByLabel("Name").inputValue(), outage).toBe("typed before the outage");
      expect(await signedInAs(page).textContent(), outage).toContain("hana");
    }
    // And once the gateway answers again, the form sends what was typed.
    await page.getByRole("button", { name: "Issue", exact: true }).click();
    await page.getByTestId("new-key-value").waitFor();
    expect(uncaught).toEqual([]);
  });

  it("given the gateway out of reach while an admin's tab was away, when it is shown again, then the admin page stays with what was typed", async () => {
    await page.goto(`${harness.url}/console/admin/accounts`);
    await page.getByLabel("Admin token").fill(testSecrets.adminToken);
    await page.getByRole("button", { name: "Sign in" }).click();
    const reference = page.getByRole("region", { name: "Top up" }).getByLabel("Reference");
    await reference.fill("invoice typed before the outage");
    await page.waitForTimeout(sessionReadFreshMs);
    let asked = 0;
    await page.route(`${harness.url}/**`, async (route) => {
      asked += 1;
      await route.abort("connectionfailed");
    });

    await page.evaluate("window.dispatchEvent(new Event('visibilitychange'))");
    await poll(() => asked).toBeGreaterThan(0);
    await page.waitForTimeout(300);
    await page.unroute(`${harness.url}/**`);

    expect(await page.getByRole("heading", { name: "Admin sign-in" }).count()).toBe(0);
    expect(await reference.inputValue()).toBe("invoice typed before the outage");
    expect(uncaught).toEqual([]);
  });
});
