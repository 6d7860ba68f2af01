import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import express from "express";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAccountRouter } from "../../../src/gateway/account/account-router";
import { createApp } from "../../../src/gateway/app";
import { authenticateSession } from "../../../src/gateway/middleware/authenticate-session";
import { PostgresEndedSessions } from "../../../src/sessions/ended-sessions";
import { SessionTokens } from "../../../src/sessions/session-tokens";
import { creditToppedUp, silentLogger, usageRecorded } from "../../billing/billing-ledger-fixtures";
import { usageCharge } from "../../support/ledger-fixtures";
import { type LedgerHarness, openLedgerHarness } from "../../support/ledger-harness";

/**
 * `GET /llm/balance` answers an account's balance, held and pending from one reading of the ledger's funds,
 * so that `balance − pending − held` is what the account has available at every instant: a charge moves its
 * amount from pending into the balance in one commit, and the balance must not wait for a projection that
 * pending does not wait for.
 */

const user = { kind: "user", id: "tae" } as const;
const startedAt = "2026-11-20T02:00:00.000Z";
let ledger: LedgerHarness;
let server: Server;
let url = "";
let token = "";

beforeAll(async () => {
  ledger = await openLedgerHarness("balance_one_snapshot");
  const sessions = new SessionTokens(
    "test-session-secret-0123456789abcdef0123456789",
    false,
    new PostgresEndedSessions(ledger.ledger.pool),
  );
  const account = express.Router();
  account.use(
    authenticateSession(sessions),
    createAccountRouter({ database: ledger.ledger.pool, roles: { roleOf: async () => "owner" } }),
  );
  const noGenerationEndpoints = () => {};
  server = createServer(
    createApp({
      routers: { generation: noGenerationEndpoints, account },
      requestBodyBytesMax: 1024,
      logger: silentLogger,
    }),
  ).listen(0, "127.0.0.1");
  await new Promise<void>((resolve) => server.once("listening", () => resolve()));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  token = (await sessions.mint({ userId: user.id, organizationId: null }, 3_600)).token;
}, 60_000);

afterAll(async () => {
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  await ledger?.dispose();
});

async function balance(): Promise<unknown> {
  const response = await fetch(`${url}/llm/balance`, { headers: { authorization: `Bearer ${token}` } });
  expect(response.status).toBe(200);
  return ((await response.json()) as { user: unknown }).user;
}

describe("GET /llm/balance", () => {
  it("given a charge committed that the balances projection has not applied yet, when the balance is read, then the charge is in the balance as it has left pending", async () => {
    // Given: ₩100 topped up and a usage of ₩12.5 recorded (pending), both projected
    const recorded = usageRecorded({ requestId: "req_lagging", account: user, startedAt });
    Object.assign((recorded.events[0]!.event as { data: object }).data, {
      heldWon: null,
      pendingWon: "12.5",
    });
    await ledger.append(creditToppedUp(user, "100", startedAt), recorded);
    await ledger.project();
    expect(await balance()).toEqual({ id: user.id, balanceWon: "100", heldWon: "0", pendingWon: "12.5" });

    // When: its charge commits, the projections not run since
    const charged = usageCharge(user, "req_lagging", startedAt, "12.500000");
    Object.assign((charged.events[0]!.event as { data: object }).data, { releasedPendingWon: "12.5" });
    await ledger.append(charged);

    // Then: the ₩12.5 is in the balance, not in neither
    expect(await balance()).toEqual({ id: user.id, balanceWon: "87.5", heldWon: "0", pendingWon: "0" });
  });
});
