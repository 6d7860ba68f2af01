import { randomUUID } from "node:crypto";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { balancesProjection } from "../../projections/balances";
import { readLimits } from "../../src/kernel/limits";
import type { StreamAppend } from "../../src/ledger/store/event-store";
import { compareLogPositions, type LogPosition, logStart } from "../../src/ledger/store/log-position";
import { usageRecorded } from "../billing/billing-ledger-fixtures";
import { type GatewayHarness, startGatewayHarness, testSecrets } from "../support/gateway-harness";
import { type Browser, launchBrowser, screenshot, seriousAccessibilityViolations } from "./support/browser";
import { patienceMs, poll } from "./support/patient";

/**
 * The admin's Accounts page over more accounts than one read returns: every account is reached by paging,
 * an account whose funds fail to load says so rather than showing nothing, and pending usage the reconciler
 * cannot price is named beside the account's funds.
 */

// More than two of the server's largest pages: the last account sorts after all the others.
const accountCount = readLimits.accountsPageRowsMax * 2 + 1;
const accountIdOf = (index: number) => `payer-${String(index).padStart(5, "0")}`;
const lastAccountId = accountIdOf(accountCount - 1);

let harness: GatewayHarness;
let browser: Browser;
let page: Page;

/** Top-ups of `accountCount` users appended to the ledger in batches, then projected. */
async function seedAccounts(): Promise<void> {
  const appends: StreamAppend[] = Array.from({ length: accountCount }, (_unused, index) => {
    const account = { kind: "user" as const, id: accountIdOf(index) };
    return {
      streamId: `account-user-${account.id}`,
      expectedVersion: "any",
      events: [
        {
          eventId: randomUUID(),
          event: {
            type: "CreditToppedUp",
            data: { account, amountWon: `${index + 1}.5`, reference: "seeded" },
            metadata: { actor: "admin", occurredAt: new Date().toISOString() },
          },
        },
      ],
    };
  });
  let lastPosition: LogPosition = logStart;
  for (let first = 0; first < appends.length; first += 500) {
    for (const outcome of await harness.service.ledger.store.appendBatch(appends.slice(first, first + 500))) {
      if (outcome.status === "rejected") throw outcome.reason;
      if (compareLogPositions(outcome.value.position, lastPosition) > 0)
        lastPosition = outcome.value.position;
    }
  }
  await harness.service.waiter.waitFor(lastPosition, [balancesProjection.name], patienceMs * 3);
}

const accountsTable = () => page.getByTestId("accounts-table");

beforeAll(async () => {
  harness = await startGatewayHarness({
    label: "console_admin_accounts",
    billing: {},
    service: { adminToken: testSecrets.adminToken },
  });
  await seedAccounts();
  browser = await launchBrowser({ locale: "en-US", origin: harness.url });
  page = browser.page;
  page.setDefaultTimeout(patienceMs);
  await page.goto(`${harness.url}/console/admin/accounts`);
  await page.getByLabel("Admin token").fill(testSecrets.adminToken);
  await page.getByRole("button", { name: "Sign in" }).click();
  await accountsTable().waitFor();
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await harness?.close();
});

describe("the admin's Accounts page in Chromium", { timeout: 180_000 }, () => {
  it("given more accounts than one page, when the admin pages on, then the last account is listed with its balance", async () => {
    const pager = page.getByRole("navigation", { name: "Account pages" });
    const older = pager.getByRole("button", { name: "Older →" });
    const lastRow = accountsTable().getByRole("row").filter({ hasText: lastAccountId });
    for (let pages = 0; (await lastRow.count()) === 0; pages += 1) {
      expect(pages, "pages read before the last account").toBeLessThan(accountCount);
      const firstIdBefore = await accountsTable().locator("tbody tr td").nth(1).textContent();
      await older.click();
      await poll(() => accountsTable().locator("tbody tr td").nth(1).textContent()).not.toBe(firstIdBefore);
    }
    expect(await lastRow.textContent()).toContain(`₩${accountCount.toLocaleString("en-US")}.5`);
    await poll(() => older.isDisabled()).toBe(true);
    await screenshot(page, "admin-accounts-last-page");
    expect(await seriousAccessibilityViolations(page)).toEqual([]);

    await pager.getByRole("button", { name: "← Newer" }).click();
    await poll(() => lastRow.count()).toBe(0);
  });

  it("given an account searched by part of its id, then only the accounts containing it are listed", async () => {
    await page.getByLabel("Search accounts").fill(lastAccountId.slice(-4));
    await page.getByRole("button", { name: "Search" }).click();
    await poll(() => accountsTable().locator("tbody tr").count()).toBe(1);
    expect(await accountsTable().locator("tbody tr").textContent()).toContain(lastAccountId);
  });

  it("given pending usage of a model nothing prices, when the admin opens the account's details, then its funds count it and the page names it", async () => {
    // Given: a usage of a model without any price, recorded at ₩3 (the reconciler cannot charge it)
    const accountId = accountIdOf(1);
    const startedAt = "2026-11-20T02:00:00.000Z";
    const { position } = await harness.service.ledger.store.append(
      usageRecorded({
        requestId: "req_retired_model",
        account: { kind: "user", id: accountId },
        model: "retired-model",
        startedAt,
        heldWon: "0",
        pendingWon: "3",
      }),
    );
    await harness.service.waiter.waitFor(position, [balancesProjection.name], patienceMs);

    // When
    await page.getByLabel("Search accounts").fill(accountId);
    await page.getByRole("button", { name: "Search" }).click();
    await accountsTable()
      .getByRole("button", { name: `Details ${accountId}` })
      .click();

    // Then
    const details = page.getByRole("region", { name: `user:${accountId}` });
    expect(await details.getByTestId("account-funds").textContent()).toContain("Pending: ₩3");
    const cells = await details.getByTestId("unpriceable-pending").locator("tbody td").allTextContents();
    expect(cells.slice(0, 3)).toEqual(["retired-model", "No price of the model then", "1"]);
    // Seoul time; ICU may put a narrow no-break space before AM.
    expect(cells[3]).toMatch(/^Nov 20, 2026, 11:00:00\sAM$/);
    await screenshot(page, "admin-accounts-unpriceable-pending");
    expect(await seriousAccessibilityViolations(page)).toEqual([]);
  });

  it("given the account's funds failing to load, when the admin opens its details, then the page says why", async () => {
    const accountId = accountIdOf(0);
    const funds = (url: URL) => url.pathname === `/admin/accounts/user/${accountId}`;
    await page.route(funds, (route) =>
      route.fulfill({ status: 503, json: { status: 300, message: "The ledger is unavailable" } }),
    );
    try {
      await page.reload();
      await accountsTable()
        .getByRole("button", { name: `Details ${accountId}` })
        .click();
      const details = page.getByRole("region", { name: `user:${accountId}` });
      await details.waitFor();
      expect(await details.getByRole("alert").textContent()).toBe(
        "The gateway could not complete this; try again: The ledger is unavailable",
      );
    } finally {
      await page.unroute(funds);
    }
  });
});
