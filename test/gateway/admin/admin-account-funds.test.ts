import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import express from "express";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createFxRateRefresher } from "../../../src/billing/fx/fx-rate-refresh";
import { createAdminRouter } from "../../../src/gateway/admin/admin-router";
import { createApp } from "../../../src/gateway/app";
import { authenticateAdmin } from "../../../src/gateway/middleware/authenticate-admin";
import type { AccountReference } from "../../../src/ledger/events";
import type { StreamAppend } from "../../../src/ledger/store/event-store";
import {
  creditToppedUp,
  fxRateUpdated,
  keyId,
  modelPriceSet,
  silentLogger,
  usageRecorded,
} from "../../billing/billing-ledger-fixtures";
import { usageCharge } from "../../support/ledger-fixtures";
import { type LedgerHarness, openLedgerHarness } from "../../support/ledger-harness";

/**
 * An account as the admin API shows it — one in `GET /admin/accounts`, or alone — has its balance, held and
 * pending from one reading of the ledger's funds, so `balance − pending − held` is what it has available
 * whatever the projections have applied; and usage nothing can price at its start (the reconciler leaves it
 * pending until an operator records a price or a rate) is named beside those figures, never a 5xx.
 */

const adminToken = "test-admin-token-0123456789abcdef0123456789ab";
let ledger: LedgerHarness;
let server: Server;
let url = "";

beforeAll(async () => {
  ledger = await openLedgerHarness("admin_account_funds");
  const admin = express.Router();
  admin.use(
    authenticateAdmin(adminToken),
    createAdminRouter({
      store: ledger.store,
      database: ledger.ledger.pool,
      // Reads only: nothing waits for a projection, which the test holds behind.
      waiter: { waitFor: async () => {} },
      fxRateRefresher: createFxRateRefresher({
        store: ledger.store,
        clock: () => new Date(),
        logger: silentLogger,
        authkey: undefined,
        url: "http://127.0.0.1:9",
      }),
    }),
  );
  const noGenerationEndpoints = () => {};
  server = createServer(
    createApp({
      routers: { generation: noGenerationEndpoints, account: express.Router(), admin },
      requestBodyBytesMax: 1024,
      logger: silentLogger,
    }),
  ).listen(0, "127.0.0.1");
  await new Promise<void>((resolve) => server.once("listening", () => resolve()));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}, 60_000);

afterAll(async () => {
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  await ledger?.dispose();
});

async function adminGet(path: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${url}/admin${path}`, { headers: { authorization: `Bearer ${adminToken}` } });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/** The account's figures in its view and in its row of the list. */
async function figuresOf(account: AccountReference): Promise<{ view: unknown; listed: unknown }> {
  const view = await adminGet(`/accounts/${account.kind}/${account.id}`);
  expect(view.status).toBe(200);
  const list = await adminGet(`/accounts?kind=${account.kind}&search=${account.id}`);
  expect(list.status).toBe(200);
  const [row] = list.body.data as Record<string, unknown>[];
  const { balanceWon, heldWon, pendingWon } = view.body;
  return {
    view: { balanceWon, heldWon, pendingWon },
    listed: { balanceWon: row?.balanceWon, heldWon: row?.heldWon, pendingWon: row?.pendingWon },
  };
}

function usageAuthorized(account: AccountReference, requestId: string, startedAt: string, holdWon: string) {
  return {
    streamId: `usage-${requestId}`,
    expectedVersion: "no-stream",
    events: [
      {
        eventId: crypto.randomUUID(),
        event: {
          type: "UsageAuthorized",
          data: {
            requestId,
            keyId,
            account,
            userId: account.id,
            organizationId: null,
            model: "alpha-5.4",
            endpoint: "chat.completions",
            streamed: false,
            startedAt,
            holdWon,
            estimate: { inputTokensMax: 1_000, outputTokensMax: 1_000, estimatedWon: holdWon },
            gatewayInstance: "gateway-test",
            expiresAt: "2026-11-20T03:00:00.000Z",
          },
          metadata: { actor: `key:${keyId}`, occurredAt: startedAt },
        },
      },
    ],
  } satisfies StreamAppend;
}

describe("GET /admin/accounts and GET /admin/accounts/:kind/:id while the projections lag", () => {
  it("given a hold settled and then charged, neither projected, then each answer's figures are one instant of the funds", async () => {
    // Given: ₩100 topped up and a hold of ₩20, both projected
    const account = { kind: "user", id: "lagging" } as const;
    const startedAt = "2026-11-20T02:00:00.000Z";
    await ledger.append(
      creditToppedUp(account, "100", startedAt),
      usageAuthorized(account, "req_lagging", startedAt, "20"),
    );
    await ledger.project();
    const held = { balanceWon: "100", heldWon: "20", pendingWon: "0" };
    expect(await figuresOf(account)).toEqual({ view: held, listed: held });

    // When its usage is recorded (the hold becomes its cost, ₩12.5), the projections not run since
    const recorded = usageRecorded({
      requestId: "req_lagging",
      account,
      startedAt,
      heldWon: "20",
      pendingWon: "12.5",
    });
    await ledger.append({ ...recorded, expectedVersion: "any" });

    // Then: the ₩20 held is ₩12.5 pending, not in neither
    const pending = { balanceWon: "100", heldWon: "0", pendingWon: "12.5" };
    expect(await figuresOf(account)).toEqual({ view: pending, listed: pending });

    // When its charge commits, still not projected
    const charged = usageCharge(account, "req_lagging", startedAt, "12.500000");
    Object.assign((charged.events[0]!.event as { data: object }).data, { releasedPendingWon: "12.5" });
    await ledger.append(charged);

    // Then: the ₩12.5 is in the balance, not in neither
    const posted = { balanceWon: "87.5", heldWon: "0", pendingWon: "0" };
    expect(await figuresOf(account)).toEqual({ view: posted, listed: posted });
  });
});

describe("GET /admin/accounts/:kind/:id with usage nothing prices at its start", () => {
  it("given pending usage of a model without price then, or before any FX rate, then the view answers its funds and names that usage", async () => {
    // Given: an FX rate from Nov 1st; usage of a catalog model before it, of a model nobody ever priced, of
    // a model priced only after its usage started, and one the reconciler can charge
    const account = { kind: "user", id: "unpriceable" } as const;
    const startedAt = "2026-11-20T02:00:00.000Z";
    await ledger.append(
      fxRateUpdated(
        { appliesOn: "2026-11-01", rateDate: "2026-11-01", rateKrwPerUsd: "1400" },
        "2026-11-01T00:00:00.000Z",
      ),
      modelPriceSet("late-model", { input: "1", cachedInput: "1", output: "1" }, "2026-11-20T03:00:00.000Z"),
      creditToppedUp(account, "100", startedAt),
      usageRecorded({ requestId: "req_priced", account, startedAt, heldWon: "0", pendingWon: "1.5" }),
      usageRecorded({
        requestId: "req_retired",
        account,
        startedAt,
        model: "retired-model",
        heldWon: "0",
        pendingWon: "3",
      }),
      usageRecorded({
        requestId: "req_retired_later",
        account,
        startedAt: "2026-11-20T02:30:00.000Z",
        model: "retired-model",
        heldWon: "0",
        pendingWon: "1",
      }),
      usageRecorded({
        requestId: "req_late",
        account,
        startedAt,
        model: "late-model",
        heldWon: "0",
        pendingWon: "2",
      }),
      usageRecorded({
        requestId: "req_before_fx",
        account,
        startedAt: "2026-10-31T00:00:00.000Z",
        heldWon: "0",
        pendingWon: "0.5",
      }),
    );
    await ledger.project();

    // When
    const view = await adminGet(`/accounts/${account.kind}/${account.id}`);

    // Then: every pending usage counts at its recorded cost, and the ones the reconciler cannot charge are named
    expect(view).toEqual({
      status: 200,
      body: {
        kind: "user",
        id: "unpriceable",
        balanceWon: "100",
        heldWon: "0",
        pendingWon: "8",
        unpriceablePending: [
          {
            model: "alpha-5.4",
            reason: "no-fx-rate",
            requests: 1,
            oldestStartedAt: "2026-10-31T00:00:00.000Z",
          },
          { model: "late-model", reason: "unknown-model", requests: 1, oldestStartedAt: startedAt },
          { model: "retired-model", reason: "unknown-model", requests: 2, oldestStartedAt: startedAt },
        ],
      },
    });
  });
});
