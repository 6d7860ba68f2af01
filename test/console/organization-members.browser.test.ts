import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GatewayHarness, startGatewayHarness } from "../support/gateway-harness";
import { type Browser, launchBrowser, screenshot, seriousAccessibilityViolations } from "./support/browser";
import { patienceMs, poll } from "./support/patient";

/**
 * Roles in an organization in the console, in a real browser against the real gateway (C14): a member sees
 * the organization's keys without the limits form and the members without a way to change them; an owner
 * sees both and changes a member's role, which the API then answers; the members page in Korean at 390 px.
 */

const organizationId = "org-console-roles";
const keyName = "shared key";
const phone = { width: 390, height: 844 };

let harness: GatewayHarness;
let browser: Browser;
let page: Page;

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
}

async function openOrganizationKeys() {
  await page.getByRole("link", { name: "API keys" }).click();
  await page.getByRole("radio", { name: "Organization" }).check();
  await page.getByTestId(`key-row-${keyName}`).waitFor();
}

beforeAll(async () => {
  harness = await startGatewayHarness({ label: "console_roles", billing: {} });
  const owner = await harness.session("hana", organizationId);
  // The first member the organization sees is its owner; she makes minho a member and issues a shared key.
  await api("GET", "/llm/organization/members", owner);
  await api("PUT", "/llm/organization/members/minho", owner, { role: "member" });
  await harness.issueKey(owner, { isOrganization: true, name: keyName });
  browser = await launchBrowser({ locale: "en-US", origin: harness.url });
  page = browser.page;
  page.setDefaultTimeout(patienceMs);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await harness?.close();
});

describe("organization roles in the console, in Chromium", { timeout: 120_000 }, () => {
  it("a member sees the organization's keys without the limits form, and the members without changing them", async () => {
    await signInAs("minho");
    await openOrganizationKeys();
    const row = page.getByTestId(`key-row-${keyName}`);
    await row.getByRole("button", { name: "Deactivate" }).waitFor();
    expect(await row.getByRole("button", { name: /Set limits/ }).count()).toBe(0);
    await page.getByText("Only the organization's owners and admins set the limits of its keys.").waitFor();

    await page.getByRole("link", { name: "Members" }).click();
    await page.getByTestId("member-row-hana").waitFor();
    expect(await page.getByTestId("your-role").textContent()).toContain("Member");
    expect(await page.getByTestId("member-row-hana").textContent()).toContain("Owner");
    expect(await page.getByRole("table").getByRole("combobox").count()).toBe(0);
    expect(await page.getByRole("button", { name: "Grant role" }).count()).toBe(0);
  });

  it("an owner sees the limits form and changes a member's role", async () => {
    await page.getByRole("button", { name: "Sign out" }).click();
    await signInAs("hana");
    await openOrganizationKeys();
    await page
      .getByTestId(`key-row-${keyName}`)
      .getByRole("button", { name: /Set limits/ })
      .waitFor();

    await page.getByRole("link", { name: "Members" }).click();
    await page.getByTestId("member-row-minho").waitFor();
    expect(await page.getByTestId("your-role").textContent()).toContain("Owner");
    expect(await seriousAccessibilityViolations(page)).toEqual([]);
    await page.getByLabel("Role of minho").selectOption("admin");
    await page.getByRole("button", { name: "Save role minho" }).click();
    const owner = await harness.session("hana", organizationId);
    await poll(async () => {
      const members = await api("GET", "/llm/organization/members", owner);
      return (members.data as { userId: string; role: string }[]).find((member) => member.userId === "minho")
        ?.role;
    }).toBe("admin");
    await poll(() => page.getByLabel("Role of minho").inputValue()).toBe("admin");
  });

  it("fits the members page at 390 px and 1366 px in English and Korean", async () => {
    for (const [language, heading] of [
      ["en", "Members"],
      ["ko", "구성원"],
    ] as const)
      for (const width of [390, 1366]) {
        await page.evaluate(`window.localStorage.setItem("won-console.language", "${language}")`);
        await page.setViewportSize({ width, height: 844 });
        await page.reload();
        await page.getByRole("heading", { name: heading }).waitFor();
        await page.getByTestId("member-row-minho").waitFor();
        expect(
          await page.evaluate<number>("document.documentElement.scrollWidth"),
          `${language} ${width}`,
        ).toBeLessThanOrEqual(width);
      }
  });

  it("shows the members page in Korean on a phone", async () => {
    await page.evaluate(`window.localStorage.setItem("won-console.language", "ko")`);
    await page.setViewportSize(phone);
    await page.reload();
    await page.getByRole("heading", { name: "구성원" }).waitFor();
    await page.getByTestId("member-row-minho").waitFor();
    expect(await page.getByTestId("your-role").textContent()).toContain("소유자");
    expect(await seriousAccessibilityViolations(page)).toEqual([]);
    await screenshot(page, "organization-members-ko-390", { fullPage: false });
    expect(await page.evaluate<number>("document.documentElement.scrollWidth")).toBeLessThanOrEqual(
      phone.width,
    );
  });
});
