import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import pino from "pino";
import type { Page } from "playwright-core";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningWebhookWorker, startWebhookWorker } from "../../workers/deliver-webhooks";
import { type GatewayHarness, startGatewayHarness } from "../support/gateway-harness";
import { type Browser, launchBrowser, screenshot, seriousAccessibilityViolations } from "./support/browser";
import { patienceMs, poll } from "./support/patient";

/**
 * The webhooks page in Chromium against the real gateway, PostgreSQL and the webhook worker, delivering to a
 * receiver on 127.0.0.1 (so the gateway and worker allow private networks, as WEBHOOK_ALLOW_PRIVATE_NETWORKS
 * does) that verifies each signature with the secret the page showed once: the threshold set and cleared, an
 * endpoint added, tested until its log says delivered, and deleted; a secret rotated, a test verified under
 * the new and the old one; Korean on a phone; a member of the organization told that only owners and admins
 * manage its webhooks.
 */

const organizationId = "org-console-webhooks";
const owner = "hana-webhooks";
const member = "minho-webhooks";
const phone = { width: 390, height: 844 };

let harness: GatewayHarness;
let worker: RunningWebhookWorker;
let browser: Browser;
let page: Page;
/** The secret of the endpoint under test: the receiver answers 400 to what it does not verify. */
let secret = "";
const received: { type: string }[] = [];

const server: Server = createServer((request, response) => {
  const chunks: Buffer[] = [];
  request.on("data", (chunk: Buffer) => chunks.push(chunk));
  request.on("end", () => {
    const body = Buffer.concat(chunks).toString("utf8");
    try {
      new Webhook(secret).verify(body, request.headers as Record<string, string>);
    } catch {
      return void response.writeHead(400).end();
    }
    received.push(JSON.parse(body) as { type: string });
    response.writeHead(204).end();
  });
});
let receiverUrl = "";

async function api(method: string, path: string, token: string, body?: unknown) {
  const response = await fetch(`${harness.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return (await response.json()) as Record<string, unknown>;
}

async function signInAs(userId: string) {
  await page.goto(`${harness.url}/console/`);
  await page.getByLabel("Session token").fill(await harness.session(userId, organizationId));
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByTestId("signed-in-as").waitFor();
  await page.getByRole("link", { name: "Webhooks" }).click();
  await page.getByRole("heading", { name: "Webhooks", level: 1 }).waitFor();
}

beforeAll(async () => {
  receiverUrl = await new Promise<string>((resolve) =>
    server.listen(0, "127.0.0.1", () =>
      resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`),
    ),
  );
  harness = await startGatewayHarness({
    label: "console_webhooks",
    service: { webhookAllowPrivateNetworks: true },
  });
  worker = startWebhookWorker(harness.service.ledger.pool, pino({ level: "silent" }), {
    pollIntervalMs: 100,
    allowPrivateNetworks: true,
  });
  // The first member the organization sees is its owner; she makes the other one a member.
  const ownerToken = await harness.session(owner, organizationId);
  await api("GET", "/llm/organization/members", ownerToken);
  await api("PUT", `/llm/organization/members/${member}`, ownerToken, { role: "member" });
  browser = await launchBrowser({ locale: "en-US", origin: harness.url });
  page = browser.page;
  page.setDefaultTimeout(patienceMs);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await worker?.close();
  await harness?.close();
  await new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
});

describe("the webhooks page, in Chromium", { timeout: 120_000 }, () => {
  it("sets and clears the low-funds threshold", async () => {
    await signInAs(owner);
    const token = await harness.session(owner, organizationId);
    await page.getByLabel("Alert below (won)").fill("5000");
    await page.getByRole("button", { name: "Save threshold" }).click();
    await poll(() => page.getByTestId("alert-threshold").textContent()).toContain("₩5,000");
    expect((await api("GET", "/llm/alerts", token)).balanceBelowWon).toBe("5000");
    await page.getByRole("button", { name: "Clear threshold" }).click();
    await poll(() => page.getByTestId("alert-threshold").textContent()).toBe("No low-funds alert is set.");
    expect((await api("GET", "/llm/alerts", token)).balanceBelowWon).toBeNull();
  });

  it("keeps what was typed when the gateway refuses an endpoint, and drops the refusal once the form changes", async () => {
    const url = page.getByLabel("URL");
    await url.fill("ftp://files.example/hook");
    await page.getByRole("checkbox", { name: "Funds low (balance.low)" }).check();
    await page.getByRole("button", { name: "Add endpoint" }).click();
    const refusal = page.getByText("url must be an absolute http:// or https:// URL", { exact: false });
    await refusal.waitFor();
    expect(await url.inputValue()).toBe("ftp://files.example/hook");
    expect(await page.getByRole("checkbox", { name: "Funds low (balance.low)" }).isChecked()).toBe(true);
    await url.fill("");
    await poll(() => refusal.count()).toBe(0);
    await page.getByRole("checkbox", { name: "Funds low (balance.low)" }).uncheck();
  });

  it("adds an endpoint, shows its secret once, delivers a test and deletes it", async () => {
    await page.getByLabel("URL").fill(receiverUrl);
    await page.getByRole("checkbox", { name: "Funds low (balance.low)" }).check();
    await page.getByRole("button", { name: "Add endpoint" }).click();
    secret = await page.getByLabel("Signing secret", { exact: true }).inputValue();
    expect(secret).toMatch(/^whsec_/);
    await page.getByText("Shown only once: copy it now.", { exact: false }).waitFor();
    await page.getByRole("button", { name: "Copy" }).click();
    expect(await page.evaluate<string>("navigator.clipboard.readText()")).toBe(secret);
    await page.getByRole("button", { name: "Done" }).click();
    const row = page.getByTestId(`webhook-row-${receiverUrl}`);
    await row.waitFor();
    expect(await row.textContent()).toContain("Funds low (balance.low)");
    await page.reload();
    await row.waitFor();
    expect(await page.content()).not.toContain(secret);

    await row.getByRole("button", { name: "Send test" }).click();
    await poll(() =>
      page.getByTestId("delivery-log").getByTestId("delivery-status").first().textContent(),
    ).toBe("Delivered");
    expect(await page.getByTestId("delivery-log").textContent()).toContain("HTTP 204");
    expect(received.map((message) => message.type)).toEqual(["webhook.test"]);
    expect(await seriousAccessibilityViolations(page)).toEqual([]);
    await screenshot(page, "webhooks-en-1280");

    await row.getByRole("button", { name: "Delete" }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Delete" }).click();
    await poll(() => row.count()).toBe(0);
    await page.getByText("No endpoints yet.").waitFor();
    // The focused Delete went with its row: focus is on the list's heading, not lost to the page.
    expect(
      await page.evaluate<string>(
        "document.activeElement?.tagName + ': ' + document.activeElement?.textContent",
      ),
    ).toBe("H2: Endpoints");
    const token = await harness.session(owner, organizationId);
    expect((await api("GET", "/llm/webhooks", token)).data).toEqual([]);
  });

  it("rotates an endpoint's secret after a confirmation, shows the new one once, and a test verifies under it and the old one", async () => {
    const token = await harness.session(owner, organizationId);
    const oldSecret = String(
      (await api("POST", "/llm/webhooks", token, { url: receiverUrl, events: ["key.limit_reached"] })).secret,
    );
    await page.reload();
    const row = page.getByTestId(`webhook-row-${receiverUrl}`);
    await row.getByRole("button", { name: "Rotate secret" }).click();
    const dialog = page.getByRole("dialog");
    expect(await dialog.textContent()).toContain("For 24 hours every delivery is signed with both");
    await dialog.getByRole("button", { name: "Rotate secret" }).click();
    await page.getByRole("heading", { name: "The endpoint's new signing secret" }).waitFor();
    const newSecret = await page.getByLabel("Signing secret", { exact: true }).inputValue();
    expect(newSecret).toMatch(/^whsec_/);
    expect(newSecret).not.toBe(oldSecret);
    await page
      .getByText("The previous secret keeps signing beside this one for 24 hours", { exact: false })
      .waitFor();
    expect(await seriousAccessibilityViolations(page)).toEqual([]);
    await page.getByRole("button", { name: "Done" }).click();
    await page.reload();
    await row.waitFor();
    expect(await page.content()).not.toContain(newSecret);

    // A receiver still on the old secret verifies the test, and so does one already on the new.
    for (const receiverSecret of [oldSecret, newSecret]) {
      secret = receiverSecret;
      const delivered = received.length;
      await row.getByRole("button", { name: "Send test" }).click();
      await poll(() => received.length).toBe(delivered + 1);
    }
    await row.getByRole("button", { name: "Delete" }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Delete" }).click();
    await poll(() => row.count()).toBe(0);
  });

  it("shows the page in Korean on a phone, with an endpoint and its log", async () => {
    const token = await harness.session(owner, organizationId);
    secret = String(
      (await api("POST", "/llm/webhooks", token, { url: receiverUrl, events: ["statement.closed"] })).secret,
    );
    await page.evaluate(`window.localStorage.setItem("won-console.language", "ko")`);
    await page.setViewportSize(phone);
    await page.reload();
    await page.getByRole("heading", { name: "웹훅", level: 1 }).waitFor();
    const row = page.getByTestId(`webhook-row-${receiverUrl}`);
    await row.getByRole("button", { name: "테스트 전송" }).click();
    await poll(() =>
      page.getByTestId("delivery-log").getByTestId("delivery-status").first().textContent(),
    ).toBe("전송됨");
    expect(await seriousAccessibilityViolations(page)).toEqual([]);
    await screenshot(page, "webhooks-ko-390", { fullPage: false });
    expect(await page.evaluate<number>("document.documentElement.scrollWidth")).toBeLessThanOrEqual(
      phone.width,
    );
  });

  it("tells an organization member that only owners and admins manage its webhooks", async () => {
    await page.evaluate(`window.localStorage.setItem("won-console.language", "en")`);
    await page.getByRole("button", { name: "로그아웃" }).click();
    await signInAs(member);
    await page.getByRole("radio", { name: "Organization" }).check();
    await page.getByTestId("webhooks-owners-only").waitFor();
    expect(await page.getByTestId("webhooks-owners-only").textContent()).toBe(
      "Only the organization's owners and admins manage its alerts and webhooks.",
    );
    expect(await page.getByRole("button", { name: "Add endpoint" }).count()).toBe(0);
    expect(await seriousAccessibilityViolations(page)).toEqual([]);
  });
});
