import OpenAI from "openai";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { formatChargeWon } from "../../console/src/lib/format";
import { type GatewayHarness, startGatewayHarness, testSecrets } from "../support/gateway-harness";
import { waitForLedgerAtRest } from "../support/ledger-at-rest";
import { type Browser, launchBrowser, screenshot, seriousAccessibilityViolations } from "./support/browser";
import { patienceMs, poll } from "./support/patient";

/**
 * The activity log, the models & prices page and the playground in a real browser against the real
 * gateway: a served, a refused and a failed request listed with their outcomes; won prices per million
 * tokens as an API key sees them; a multi-turn chat on the signed-in session with each reply's cost.
 */

const userId = "ara";
const model = "alpha-5.4-mini";

let harness: GatewayHarness;
let browser: Browser;
let page: Page;
let sessionToken = "";
let apiKey = "";
const requestIds = { served: "", refused: "", failed: "" };

function requestIdOf(error: unknown): string {
  expect(error).toBeInstanceOf(OpenAI.APIError);
  return (error as InstanceType<typeof OpenAI.APIError>).requestID!;
}

async function failureOf(call: Promise<unknown>): Promise<unknown> {
  return call.then(
    () => {
      throw new Error("the call was expected to fail");
    },
    (error: unknown) => error,
  );
}

beforeAll(async () => {
  harness = await startGatewayHarness({
    label: "console_activity",
    billing: {},
    service: { adminToken: testSecrets.adminToken },
  });
  await harness.topUp({ kind: "user", id: userId }, "1000");
  sessionToken = await harness.session(userId);
  apiKey = (await harness.issueKey(sessionToken, { name: "main key" })).key;
  const client = harness.openai(apiKey, { maxRetries: 0 });
  const messages = [{ role: "user" as const, content: "Tell me about the sea" }];
  // Given a served request, one refused (a model the gateway does not serve) and one failed upstream.
  // (The served call may retry: on a loaded machine a hold can time out, which is not what is tested here.)
  const served = await harness.openai(apiKey).chat.completions.create({ model, messages }).withResponse();
  requestIds.served = served.response.headers.get("x-request-id")!;
  requestIds.refused = requestIdOf(
    await failureOf(client.chat.completions.create({ model: "no-such-model", messages })),
  );
  harness.simulator.setFault({ kind: "status", status: 500, message: "upstream exploded" });
  requestIds.failed = requestIdOf(await failureOf(client.chat.completions.create({ model, messages })));
  harness.simulator.setFault(undefined);

  browser = await launchBrowser({ locale: "en-US", origin: harness.url });
  page = browser.page;
  page.setDefaultTimeout(patienceMs);
  await page.goto(`${harness.url}/console/`);
  await page.getByLabel("Session token").fill(sessionToken);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByTestId("personal-balance").waitFor();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await harness?.close();
});

const rowOf = (requestId: string) => page.getByTestId("activity-row").filter({ hasText: requestId });

describe("activity, models and playground in Chromium", { timeout: 120_000 }, () => {
  it("lists the served, the refused and the failed request, newest first, the served one with its cost", async () => {
    await page.getByRole("link", { name: "Activity" }).click();
    await page.getByRole("heading", { name: "Activity", level: 1 }).waitFor();
    // Rows are written off the request path, and the cost once the charge lands: refresh until both show.
    await poll(async () => {
      await page.getByRole("button", { name: "Refresh" }).click();
      return (await rowOf(requestIds.served).getByTestId("activity-cost").textContent()) ?? "";
    }).toMatch(/^₩\d+\.\d\d$|^<₩0\.01$/);
    const rows = await page.getByTestId("activity-row").all();
    expect(await Promise.all(rows.map((row) => row.getAttribute("data-outcome")))).toEqual([
      "failed",
      "refused",
      "served",
    ]);
    const refused = rowOf(requestIds.refused);
    expect(await refused.getByTestId("activity-status").textContent()).toBe("404");
    expect(await refused.textContent()).toContain("Refused");
    expect(await refused.textContent()).toContain("not_found_error");
    expect(await refused.getByTestId("activity-cost").textContent()).toBe("—");
    const failed = rowOf(requestIds.failed);
    expect(await failed.getByTestId("activity-status").textContent()).toBe("500");
    expect(await failed.textContent()).toContain("Failed");
    expect(await rowOf(requestIds.served).textContent()).toContain("main key");
    await screenshot(page, "activity-en-1366");
    expect(await seriousAccessibilityViolations(page)).toEqual([]);
  });

  it("filters on the server: refused requests only", async () => {
    await page.getByLabel("Outcome").selectOption("refused");
    await page.getByRole("button", { name: "Apply" }).click();
    await poll(() => page.getByTestId("activity-row").count()).toBe(1);
    expect(await page.getByTestId("activity-row").first().textContent()).toContain(requestIds.refused);
    await page.getByLabel("Outcome").selectOption("");
    await page.getByLabel("HTTP status").fill("500");
    await page.getByRole("button", { name: "Apply" }).click();
    // The refused filter also showed one row: wait for the row to change, not for the count.
    await poll(() => page.getByTestId("activity-row").first().textContent()).toContain(requestIds.failed);
    expect(await page.getByTestId("activity-row").count()).toBe(1);
  });

  it("shows each model's won price per million tokens, as an API key sees it", async () => {
    const listed = (await (
      await fetch(`${harness.url}/llm/v1/models`, { headers: { authorization: `Bearer ${apiKey}` } })
    ).json()) as {
      data: {
        id: string;
        pricing: { inputWonPerMillionTokens: string; outputWonPerMillionTokens: string };
      }[];
    };
    const pricing = listed.data.find((entry) => entry.id === model)!.pricing;
    await page.getByRole("link", { name: "Models & prices" }).click();
    const row = page.getByTestId(`model-row-${model}`);
    await row.waitFor();
    const wonOf = (amount: string) =>
      new Intl.NumberFormat("ko-KR", { style: "currency", currency: "KRW", maximumFractionDigits: 2 }).format(
        amount as unknown as number,
      );
    expect(await row.textContent()).toContain(wonOf(pricing.inputWonPerMillionTokens));
    expect(await row.textContent()).toContain(wonOf(pricing.outputWonPerMillionTokens));
    expect(await page.getByTestId("models-fx").textContent()).toMatch(/KRW\/USD/);
    await screenshot(page, "models-en-1366");
    expect(await seriousAccessibilityViolations(page)).toEqual([]);
  });

  it("chats several turns on the signed-in session, with a system prompt, parameters and each reply's cost", async () => {
    const sent: {
      messages: { role: string; content: string }[];
      temperature?: number;
      max_tokens?: number;
    }[] = [];
    page.on("request", (request) => {
      if (new URL(request.url()).pathname === "/llm/v1/chat/completions") sent.push(request.postDataJSON());
    });
    await page.getByRole("link", { name: "Playground" }).click();
    // The models are listed at once, with the chosen one's price; no key is asked for.
    await poll(() => page.getByLabel("Model").locator("option").count()).toBeGreaterThan(20);
    expect(await page.getByLabel("API key").count()).toBe(0);
    await page.getByLabel("Model").selectOption(model);
    expect(await page.getByTestId("playground-model-price").textContent()).toMatch(/₩[\d,.]+ .*₩[\d,.]+/);
    await page.getByLabel("System prompt").fill("Answer in one short sentence.");
    await page.getByLabel("Temperature").fill("0.2");
    await page.getByLabel("Max tokens").fill("60");

    await page.getByLabel("Message").fill("What is the sea?");
    await page.getByRole("button", { name: "Send" }).click();
    await poll(() => page.getByTestId("playground-cost").first().textContent()).toMatch(
      /^₩\d+\.\d\d$|^<₩0\.01$/,
    );
    await page.getByLabel("Message").fill("And the sky?");
    await page.getByRole("button", { name: "Send" }).click();
    await poll(() => page.getByTestId("playground-cost").nth(1).textContent()).toMatch(
      /^₩\d+\.\d\d$|^<₩0\.01$/,
    );

    // Then the second turn carried the whole conversation, the system prompt and the parameters.
    expect(sent).toHaveLength(2);
    const firstReply =
      (await page.getByTestId("playground-reply").first().locator(".turn-text").textContent()) ?? "";
    expect(firstReply.length).toBeGreaterThan(0);
    expect(sent[1]).toMatchObject({
      temperature: 0.2,
      max_tokens: 60,
      messages: [
        { role: "system", content: "Answer in one short sentence." },
        { role: "user", content: "What is the sea?" },
        { role: "assistant", content: firstReply },
        { role: "user", content: "And the sky?" },
      ],
    });
    // Each reply's cost is its charge.
    const charges = (await (
      await fetch(`${harness.url}/llm/billing?limit=10&order=newest`, {
        headers: { authorization: `Bearer ${sessionToken}` },
      })
    ).json()) as { data: { amountWon: string }[] };
    expect(await page.getByTestId("playground-cost").allTextContents()).toEqual(
      charges.data
        .slice(0, 2)
        .reverse()
        .map((charge) => formatChargeWon(charge.amountWon)),
    );
    // The playground key never reaches storage.
    const storage = await page.evaluate<string>(
      "JSON.stringify({ ...window.localStorage, ...window.sessionStorage })",
    );
    expect(storage).not.toContain("svc_");
    await screenshot(page, "playground-en-1366");
    expect(await seriousAccessibilityViolations(page)).toEqual([]);
    await page.setViewportSize({ width: 390, height: 844 });
    expect(await page.evaluate<number>("document.documentElement.scrollWidth")).toBeLessThanOrEqual(390);
    await screenshot(page, "playground-en-390", { fullPage: false });
  });

  it("gives a message refused before any reply back to its box, with no empty reply and no turn kept", async () => {
    await page.setViewportSize({ width: 1366, height: 900 });
    const repliesBefore = await page.getByTestId("playground-reply").count();
    const messagesBefore = await page.getByTestId("playground-message").count();
    await page.getByLabel("Temperature").fill("3");
    await page.getByLabel("Message").fill("Too hot?");
    await page.getByRole("button", { name: "Send" }).click();
    // The refusal is said in words, and the message is back in its box to send again.
    await page.getByRole("alert").filter({ hasText: "temperature:" }).waitFor();
    await poll(() => page.getByLabel("Message").inputValue()).toBe("Too hot?");
    expect(await page.getByTestId("playground-reply").count()).toBe(repliesBefore);
    expect(await page.getByTestId("playground-message").count()).toBe(messagesBefore);
    await page.getByLabel("Temperature").fill("0.2");
  });

  it("lets an admin mint a sign-in link for a user and issue a key for an organization", async () => {
    await page.setViewportSize({ width: 1366, height: 900 });
    await page.goto(`${harness.url}/console/admin/accounts`);
    await page.getByLabel("Admin token").fill(testSecrets.adminToken);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("region", { name: "Issue a key for an account" }).waitFor();

    // A key for organization "acme", for its member "newcomer", shown once and working with the client.
    const issueForm = page.getByRole("region", { name: "Issue a key for an account" });
    await issueForm.getByLabel("Kind").selectOption("organization");
    await issueForm.getByLabel("Account id").fill("acme");
    await issueForm.getByLabel("For member (user id)").fill("newcomer");
    await issueForm.getByLabel("Name").fill("acme ci");
    await issueForm.getByRole("button", { name: "Issue" }).click();
    const organizationKey = (await issueForm.getByTestId("admin-new-key").textContent()) ?? "";
    expect(organizationKey).toMatch(/^svc_[A-Za-z0-9_-]{43}$/);
    await harness.topUp({ kind: "organization", id: "acme" }, "500");
    const completion = await harness
      .openai(organizationKey)
      .chat.completions.create({ model, messages: [{ role: "user", content: "hi" }] });
    expect(completion.choices[0]?.message.content).toBeTruthy();

    // A one-time sign-in link for "newcomer" of "acme": it signs the browser in as them, once.
    const linkForm = page.getByRole("region", { name: "Sign-in link for a user" });
    await linkForm.getByLabel("User id").fill("newcomer");
    await linkForm.getByLabel("Organization id (optional)").fill("acme");
    await linkForm.getByRole("button", { name: "Create link" }).click();
    const link = (await linkForm.getByTestId("sign-in-link").textContent()) ?? "";
    expect(link).toMatch(/\/console\/sign-in\?code=/);
    await screenshot(page, "admin-user-access-en-1366");
    expect(await seriousAccessibilityViolations(page)).toEqual([]);
    await page.goto(link);
    await page.getByTestId("signed-in-as").waitFor();
    expect(await page.getByTestId("signed-in-as").textContent()).toBe(
      "Signed in as newcomer · Organization acme",
    );
  });

  it("shows the event log newest first, filtered by type on the server, with copyable event ids", async () => {
    // The earlier requests' usages and charges land after their answers: the log is read once they have.
    await waitForLedgerAtRest(harness.service.ledger.pool);
    const admin = { authorization: `Bearer ${testSecrets.adminToken}` };
    const topUps = (await (
      await fetch(`${harness.url}/admin/events?type=CreditToppedUp&order=desc`, { headers: admin })
    ).json()) as { data: { eventId: string; streamId: string }[] };
    // Given two top-ups (ara's, then acme's) among many more events (prices, keys, usage).
    expect(topUps.data.map((event) => event.streamId)).toEqual([
      "account-organization-acme",
      "account-user-ara",
    ]);

    const newest = (await (
      await fetch(`${harness.url}/admin/events?limit=100&order=desc`, { headers: admin })
    ).json()) as {
      order: string;
      data: { eventId: string; position: string }[];
    };
    expect(newest.order).toBe("desc");
    const positions = newest.data.map((event) => event.position.split("-").map(BigInt) as [bigint, bigint]);
    expect(
      positions.every(
        ([commit, prepare], index) =>
          index === 0 ||
          commit < positions[index - 1]![0] ||
          (commit === positions[index - 1]![0] && prepare < positions[index - 1]![1]),
      ),
    ).toBe(true);

    await page.goto(`${harness.url}/console/admin/events`);
    await page.getByTestId("events-table").waitFor();
    // The page shows the log newest first, as the API gives it with order=desc.
    expect(await page.getByTestId("event-id").allTextContents()).toEqual(
      newest.data.map((event) => event.eventId),
    );

    await page.getByLabel("Type").selectOption("CreditToppedUp");
    await page.getByRole("button", { name: "Filter" }).click();
    await poll(() => page.getByTestId("event-row").count()).toBe(2);
    expect(await page.getByTestId("event-id").allTextContents()).toEqual(
      topUps.data.map((event) => event.eventId),
    );
    await page.getByTestId("event-row").first().getByRole("button", { name: /Copy/ }).click();
    expect(await page.evaluate<string>("navigator.clipboard.readText()")).toBe(topUps.data[0]!.eventId);
    await screenshot(page, "events-en-1366");
    expect(await seriousAccessibilityViolations(page)).toEqual([]);
  });
});
