import { createServer, type RequestListener } from "node:http";
import type { AddressInfo } from "node:net";
import express from "express";
import { chargeUsage } from "../../../src/billing/charging/charge-usage";
import { createFxRateRefresher, type FxRateRefresher } from "../../../src/billing/fx/fx-rate-refresh";
import { createPricingReadModel } from "../../../src/billing/read-models/pricing-read-model";
import { createAccountRouter } from "../../../src/gateway/account/account-router";
import { createUsageRouter } from "../../../src/gateway/account/usage-routes";
import { createAdminRouter } from "../../../src/gateway/admin/admin-router";
import { createApp } from "../../../src/gateway/app";
import { authenticateAdmin } from "../../../src/gateway/middleware/authenticate-admin";
import { authenticateSession } from "../../../src/gateway/middleware/authenticate-session";
import { OrganizationRoleService } from "../../../src/keys/organization-role-service";
import type { ProjectionWaiter } from "../../../src/ledger/projection/projection-waiter";
import type { EventStore } from "../../../src/ledger/store/event-store";
import { PostgresEndedSessions } from "../../../src/sessions/ended-sessions";
import { SessionTokens } from "../../../src/sessions/session-tokens";
import { runProjections, silentLogger } from "../../billing/billing-ledger-fixtures";
import { type LedgerHarness, openLedgerHarness } from "../../support/ledger-harness";

/**
 * The real HTTP edge (`createApp`) with billing's admin and account routers mounted as the service mounts
 * them — admin behind `authenticateAdmin`, account and usage by day behind `authenticateSession` — on an
 * ephemeral port, over a ledger with its projections running. The generation router is an empty stub.
 */

export const adminToken = "test-admin-token-0123456789abcdef0123456789ab";
const sessionSecret = "test-session-secret-0123456789abcdef0123456789";

function unconfiguredRefresher(store: EventStore, clock: () => Date): FxRateRefresher {
  return createFxRateRefresher({
    store,
    clock,
    logger: silentLogger,
    authkey: undefined,
    url: "http://127.0.0.1:9",
  });
}

export interface BillingApiHarness {
  ledger: LedgerHarness;
  waiter: ProjectionWaiter;
  url: string;
  /** The instant admin writes are recorded at; tests move it. */
  now: { value: Date };
  admin(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Response>;
  session(userId: string, organizationId: string | null): Promise<string>;
  close(): Promise<void>;
}

/** Runs the reconciler's ChargeUsage for one recorded usage, at a fixed instant. */
export async function chargeRecordedUsage(api: BillingApiHarness, requestId: string): Promise<void> {
  await chargeUsage(
    {
      store: api.ledger.store,
      waiter: api.waiter,
      pricing: createPricingReadModel(api.ledger.ledger.pool),
      clock: () => new Date("2026-11-20T02:00:05.000Z"),
      projectionWaitTimeoutMs: 10_000,
    },
    requestId,
  );
}

export async function startBillingApi(
  label: string,
  options: {
    /** Built over this harness's ledger and clock. */
    fxRateRefresher?: (store: EventStore, clock: () => Date) => FxRateRefresher;
    billingHistoryRowsMax?: number;
    /** How long an admin write waits for its projection before answering 503. */
    projectionWaitTimeoutMs?: number;
  } = {},
): Promise<BillingApiHarness> {
  const ledger = await openLedgerHarness(label);
  const projections = await runProjections(ledger);
  const now = { value: new Date("2026-11-20T01:00:00.000Z") };
  const sessions = new SessionTokens(sessionSecret, false, new PostgresEndedSessions(ledger.ledger.pool));
  const admin = express.Router();
  admin.use(
    authenticateAdmin(adminToken),
    createAdminRouter({
      store: ledger.store,
      database: ledger.ledger.pool,
      waiter: projections.waiter,
      fxRateRefresher: (options.fxRateRefresher ?? unconfiguredRefresher)(ledger.store, () => now.value),
      clock: () => now.value,
      ...(options.billingHistoryRowsMax === undefined
        ? {}
        : { billingHistoryRowsMax: options.billingHistoryRowsMax }),
      ...(options.projectionWaitTimeoutMs === undefined
        ? {}
        : { projectionWaitTimeoutMs: options.projectionWaitTimeoutMs }),
    }),
  );
  const roles = new OrganizationRoleService({
    pool: ledger.ledger.pool,
    store: ledger.store,
    waiter: projections.waiter,
    projectionWaitTimeoutMs: 10_000,
  });
  const account = express.Router();
  account.use(
    authenticateSession(sessions),
    createAccountRouter({ database: ledger.ledger.pool, clock: () => now.value, roles }),
  );
  account.use("/usage", createUsageRouter(ledger.ledger.pool, roles));
  const noGenerationEndpoints: RequestListener = (_request, response) => {
    response.statusCode = 404;
    response.end();
  };
  const requestListener = createApp({
    routers: { generation: noGenerationEndpoints, account, admin },
    requestBodyBytesMax: 1024 * 1024,
    logger: silentLogger,
  });
  const server = createServer(requestListener).listen(0, "127.0.0.1");
  await new Promise<void>((resolve) => server.once("listening", () => resolve()));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    ledger,
    waiter: projections.waiter,
    url,
    now,
    admin: (method, path, body, headers = {}) =>
      fetch(`${url}/admin${path}`, {
        method,
        headers: {
          authorization: `Bearer ${adminToken}`,
          ...(body === undefined ? {} : { "content-type": "application/json" }),
          ...headers,
        },
        ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) }),
      }),
    session: async (userId, organizationId) => (await sessions.mint({ userId, organizationId }, 3_600)).token,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await projections.stop();
      await ledger.dispose();
    },
  };
}
