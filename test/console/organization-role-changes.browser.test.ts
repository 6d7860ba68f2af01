import type { Page } from "playwright-core";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type GatewayHarness, startGatewayHarness } from "../support/gateway-harness";
import { type Browser, launchBrowser } from "./support/browser";
import { patienceMs, poll } from "./support/patient";

/**
 * Roles in an organization as the console meets them (C14), in a real browser against the real gateway:
 * a role is changed on purpose, not by a key pressed while choosing one; an admin demoted while a page is
 * open is refused in plain words at the next action, and the page then offers only what a member may do; a
 * member reading the organization's activity and usage is told they are their own keys', and offered no
 * filter on another member's key, whose activity they never see.
 */

const organizationId = "org-console-role-changes";
const keyName = "shared key";
const memberKeyName = "jisu's key";

let harness: GatewayHarness;
let browser: Browser;
let page: Page;
let ownerToken = "";
/** The writes the page sent, as "PUT /llm/…". */
let writes: string[] = [];

async function api(method: string, path: string, token: string, body?: unknown) {
  const response = await fetch(`${harness.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function roleOf(userId: string): Promise<string | undefined> {
  const { body } = await api("GET", "/llm/organization/members", ownerToken);
  return (body.data as { userId: string; role: string }[]).find((member) => member.userId === userId)?.role;
}

async function grant(userId: string, role: string) {
  expect((await api("PUT", `/llm/organization/members/${userId}`, ownerToken, { role })).status).toBe(200);
}

async function signInAs(userId: string) {
  await page.goto(`${harness.url}/console/`);
  const signOut = page.getByRole("button", { name: "Sign out" });
  await signOut.or(page.getByLabel("Session token")).waitFor();
  if (await signOut.count()) await signOut.click();
  await page.getByLabel("Session token").fill(await harness.session(userId, organizationId));
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByTestId("signed-in-as").waitFor();
}

beforeAll(async () => {
  harness = await startGatewayHarness({ label: "console_role_changes", billing: {} });
  ownerToken = await harness.session("hana", organizationId);
  // The first member the organization sees is its owner.
  await api("GET", "/llm/organization/members", ownerToken);
  await harness.issueKey(ownerToken, { isOrganization: true, name: keyName });
  await harness.issueKey(await harness.session("jisu", organizationId), {
    isOrganization: true,
    name: memberKeyName,
  });
  browser = await launchBrowser({ locale: "en-US", origin: harness.url });
  page = browser.page;
  page.setDefaultTimeout(patienceMs);
  page.on("request", (request) => {
    if (request.method() !== "GET") writes.push(`${request.method()} ${new URL(request.url()).pathname}`);
  });
}, 120_000);

beforeEach(async () => {
  await grant("minho", "admin");
  await grant("jisu", "member");
  writes = [];
});

afterAll(async () => {
  await browser?.close();
  await harness?.close();
});

describe("changes of role in the console, in Chromium", { timeout: 120_000 }, () => {
  it("changes a role when it is saved, not while the keyboard moves through the roles", async () => {
    await signInAs("hana");
    await page.getByRole("link", { name: "Members" }).click();
    const role = page.getByLabel("Role of jisu");
    // A closed select's arrow keys change its value at once (Chromium on Linux and Windows).
    await role.focus();
    await page.keyboard.press("ArrowUp");
    const save = page.getByRole("button", { name: "Save role jisu" });
    expect(await save.count(), "a button saves the role chosen").toBe(1);
    expect(await role.inputValue()).toBe("admin");
    expect(writes.filter((write) => write.includes("/llm/organization/members"))).toEqual([]);
    expect(await roleOf("jisu")).toBe("member");

    await page.keyboard.press("Tab");
    expect(await page.evaluate<string>("document.activeElement?.textContent")).toBe("Save role jisu");
    await page.keyboard.press("Enter");
    await poll(() => roleOf("jisu")).toBe("admin");
    await poll(() => save.count()).toBe(0);
    expect(await role.inputValue()).toBe("admin");
  });

  it("refuses a demoted admin's limits in plain words, then offers the keys without the limits form", async () => {
    await signInAs("minho");
    await page.getByRole("link", { name: "API keys" }).click();
    await page.getByRole("radio", { name: "Organization" }).check();
    const setLimits = page.getByTestId(`key-row-${keyName}`).getByRole("button", { name: /Set limits/ });
    await setLimits.click();
    await grant("minho", "member");

    await page.getByLabel("Monthly spend limit").fill("100");
    await page.getByRole("button", { name: "Save limits" }).click();
    await page
      .getByRole("dialog")
      .getByRole("alert")
      .filter({ hasText: "may not set the limits or allowed models of the organization's keys" })
      .waitFor();
    await page.getByRole("button", { name: "Cancel" }).click();
    await page.getByText("Only the organization's owners and admins set the limits of its keys.").waitFor();
    expect(await setLimits.count()).toBe(0);
    // What every member may do stays.
    await page
      .getByTestId(`key-row-${keyName}`)
      .getByRole("button", { name: /Deactivate/ })
      .waitFor();
  });

  it("refuses a demoted admin's grant in plain words, then shows the members without changing them", async () => {
    await signInAs("minho");
    await page.getByRole("link", { name: "Members" }).click();
    await page.getByLabel("Role of jisu").selectOption("admin");
    await grant("minho", "member");

    await page.getByRole("button", { name: "Save role jisu" }).click();
    await page
      .getByRole("alert")
      .filter({ hasText: "Only the organization's owners and admins grant roles" })
      .waitFor();
    await poll(() => page.getByTestId("your-role").textContent()).toContain("Member");
    expect(await page.getByRole("table").getByRole("combobox").count()).toBe(0);
    expect(await page.getByRole("button", { name: "Grant role" }).count()).toBe(0);
    expect(await roleOf("jisu")).toBe("member");
    expect(await page.getByRole("alert").textContent()).toContain("grant roles");
  });

  it("refuses a demoted admin's alert threshold, then says who manages the organization's alerts", async () => {
    await signInAs("minho");
    await page.getByRole("link", { name: "Webhooks" }).click();
    await page.getByRole("radio", { name: "Organization" }).check();
    await page.getByLabel("Alert below (won)").fill("1000");
    await grant("minho", "member");

    await page.getByRole("button", { name: "Save threshold" }).click();
    await page
      .getByRole("status")
      .filter({ hasText: "Only the organization's owners and admins manage its alerts and webhooks." })
      .waitFor();
    expect(await page.getByLabel("Alert below (won)").count()).toBe(0);
  });

  it("keeps the last owner's role as text, and lets an owner change it once there is another owner", async () => {
    await signInAs("hana");
    await page.getByRole("link", { name: "Members" }).click();
    const hanaRow = page.getByTestId("member-row-hana");
    await hanaRow.getByText("the last owner stays owner").waitFor();
    expect(await page.getByLabel("Role of hana").count()).toBe(0);

    await grant("minho", "owner");
    await page.reload();
    await page.getByLabel("Role of hana").waitFor();
    expect(await hanaRow.getByText("the last owner stays owner").count()).toBe(0);
  });

  it("offers a member the activity of their own organization keys, and says whose the usage is", async () => {
    await signInAs("jisu");
    const ownKeysOnly = page.getByText(
      "In the organization you see the requests and charges of the keys you issued; its owners and admins see every member's.",
    );
    await page.getByRole("link", { name: "Activity" }).click();
    const form = page.getByRole("form", { name: "Filter" });
    await form.getByRole("combobox", { name: /^Account/ }).selectOption("organization");
    const keyChoice = form.getByRole("combobox", { name: /^Key/ });
    await poll(() => keyChoice.locator("option").allTextContents()).toEqual([
      "any key",
      expect.stringContaining(memberKeyName),
    ]);
    await form.getByRole("button", { name: "Apply" }).click();
    await ownKeysOnly.waitFor();

    await page.getByRole("link", { name: "Usage & charges" }).click();
    await page.getByRole("heading", { name: "Usage & charges" }).waitFor();
    expect(await ownKeysOnly.count()).toBe(0);
    await page
      .getByRole("form", { name: "Filter" })
      .getByRole("combobox", { name: /^Account/ })
      .selectOption("organization");
    await ownKeysOnly.waitFor();
  });

  it("offers an admin every organization key's activity, with no such note", async () => {
    await signInAs("minho");
    await page.getByRole("link", { name: "Activity" }).click();
    const form = page.getByRole("form", { name: "Filter" });
    await form.getByRole("combobox", { name: /^Account/ }).selectOption("organization");
    await poll(() => form.getByRole("combobox", { name: /^Key/ }).locator("option").count()).toBe(3);
    await form.getByRole("button", { name: "Apply" }).click();
    await page.getByText("No requests match.").waitFor();
    expect(await page.getByText("In the organization you see the requests").count()).toBe(0);
  });
});
