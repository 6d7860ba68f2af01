import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GatewayHarness, startGatewayHarness } from "../support/gateway-harness";
import { type Browser, launchBrowser, seriousAccessibilityViolations } from "./support/browser";
import { patienceMs } from "./support/patient";

/**
 * A one-time sign-in link in a real browser: a page of another site that sends the browser to a link made
 * for its own account (login CSRF) gets a question, not a session; the visitor who follows the page's own
 * link, or opens a link directly, is signed in.
 */

let harness: GatewayHarness;
let browser: Browser;
let page: Page;
let otherSite: Server;
let otherSiteUrl = "";
let linkToSend = "";

beforeAll(async () => {
  harness = await startGatewayHarness({ label: "console_sign_in_link" });
  // Another site, on another port of this host: a page that sends its visitor to a sign-in link at once.
  otherSite = createServer((_request, response) => {
    response.setHeader("content-type", "text/html");
    response.end(`<!doctype html><title>elsewhere</title><a id="go" href="${linkToSend}">go</a>`);
  });
  await new Promise<void>((resolve) => otherSite.listen(0, "127.0.0.1", resolve));
  otherSiteUrl = `http://localhost:${(otherSite.address() as AddressInfo).port}/`;
  browser = await launchBrowser({ locale: "en-US", origin: harness.url });
  page = browser.page;
  page.setDefaultTimeout(patienceMs);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await new Promise((resolve) => otherSite?.close(resolve));
  await harness?.close();
});

async function signedInAs(): Promise<unknown> {
  return page.evaluate(
    `fetch("/console/api/session").then((response) => response.ok ? response.json() : null)`,
  );
}

describe("a one-time sign-in link, in Chromium", { timeout: 120_000 }, () => {
  it("asks a visitor another site sent, and signs them in only once they follow the page's own link", async () => {
    const code = await harness.service.consoleAuth.mintSignInCode({
      userId: "mallory",
      organizationId: null,
    });
    linkToSend = `${harness.url}/console/sign-in?code=${code}`;
    await page.goto(otherSiteUrl);
    await page.locator("#go").click();

    await page.getByRole("heading", { name: "Sign in to the console?" }).waitFor();
    expect(await signedInAs()).toBeNull();
    expect(await seriousAccessibilityViolations(page)).toEqual([]);

    await page.getByRole("link", { name: "Sign in", exact: true }).click();
    await page.waitForURL(`${harness.url}/console/`);
    expect(await signedInAs()).toMatchObject({ userId: "mallory" });
  });

  it("signs in at once a link opened directly", async () => {
    const code = await harness.service.consoleAuth.mintSignInCode({ userId: "demo", organizationId: null });
    await page.goto(`${harness.url}/console/sign-in?code=${code}`);
    await page.waitForURL(`${harness.url}/console/`);
    expect(await signedInAs()).toMatchObject({ userId: "demo" });
  });
});
