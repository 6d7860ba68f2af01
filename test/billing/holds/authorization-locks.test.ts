import { randomUUID } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { holdStatementInputOf } from "../../../src/billing/holds/postgres-usage-authorizations";
import type {
  UsageAuthorizationDecision,
  UsageAuthorizationRequest,
} from "../../../src/billing/holds/usage-authorizations";
import type { PostgresEventStore } from "../../../src/ledger/store/postgres-event-store";
import { topUp } from "../../support/ledger-fixtures";
import { type LedgerHarness, openLedgerHarness } from "../../support/ledger-harness";
import { usageAuthorizationsOf, withKeysActive } from "../../support/usage-authorizations";

/**
 * What an authorization waits for (migration 4): another authorization on the same account — the check and
 * the hold are one atomic step across processes — but never a settlement (recorded usage, charge, void,
 * top-up) still committing on that account, which used to hold the account's one funds row.
 */
describe("authorization locks", () => {
  let harness: LedgerHarness;
  let other: pg.Client;
  const store = () => harness.store as PostgresEventStore;

  beforeAll(async () => {
    harness = await openLedgerHarness("authorization_locks");
    await harness.append({
      streamId: "account-user-lin",
      expectedVersion: "any",
      events: [topUp("lin", "100", "t")],
    });
    other = new pg.Client({ connectionString: harness.database.url });
    await other.connect();
  }, 60_000);
  afterAll(async () => {
    await other?.end();
    await harness?.dispose();
  });

  it("given a settlement holding the account's settled row uncommitted, then a hold is placed without waiting for it", async () => {
    await other.query("BEGIN");
    await other.query(
      "UPDATE account_funds_settled SET balance_won = balance_won + 1000 WHERE account_kind = 'user' AND account_id = 'lin'",
    );
    try {
      const decision = await settledWithin(
        usageAuthorizationsOf(harness.ledger.pool, store()).authorizeUsage([authorization("lin", "10")]),
        10_000,
      );
      // Against the funds as last committed: the uncommitted ₩1,000 is not there to spend.
      expect(decision).toMatchObject([{ kind: "held", holdWon: "10", availableWon: "100" }]);
    } finally {
      await other.query("ROLLBACK");
    }
  });

  it("given another authorization on the account uncommitted, then a hold waits for it and sees its hold", async () => {
    await other.query("BEGIN");
    // The same request as the SQL function takes it, on a transaction of its own.
    const request = authorization("lin", "50");
    const [first] = (
      await withKeysActive(harness.ledger.pool, [request], () =>
        other.query<{ hold_won: string }>("SELECT * FROM ledger_authorize_usage($1::json)", [
          JSON.stringify([holdStatementInputOf(request, 0)]),
        ]),
      )
    ).rows;
    expect(first?.hold_won).toBe("50");
    let second: UsageAuthorizationDecision[] | undefined;
    const secondPlaced = usageAuthorizationsOf(harness.ledger.pool, store())
      .authorizeUsage([authorization("lin", "80")])
      .then((decision) => {
        second = decision;
      });
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(second).toBeUndefined();
    await other.query("COMMIT");
    await settledWithin(secondPlaced, 10_000);
    // ₩100 − ₩10 (the first test's hold) − ₩50: ₩40 left, so the ₩80 ask is held at ₩40.
    expect(second).toMatchObject([{ kind: "held", holdWon: "40", availableWon: "40" }]);
    const funds = await harness.ledger.pool.query(
      "SELECT held_won::text FROM account_funds WHERE account_kind = 'user' AND account_id = 'lin'",
    );
    expect(funds.rows).toEqual([{ held_won: "100" }]);
  });
});

function authorizationData(accountId: string, estimatedWon: string) {
  const startedAt = new Date().toISOString();
  return {
    requestId: `req_${randomUUID()}`,
    keyId: randomUUID(),
    account: { kind: "user" as const, id: accountId },
    userId: accountId,
    organizationId: null,
    model: "alpha-5.4-mini",
    endpoint: "responses" as const,
    streamed: false,
    startedAt,
    estimate: { inputTokensMax: 10, outputTokensMax: 10, estimatedWon },
    gatewayInstance: "gateway-test",
    expiresAt: new Date(Date.now() + 600_000).toISOString(),
  };
}

function authorization(accountId: string, estimatedWon: string): UsageAuthorizationRequest {
  return { eventId: randomUUID(), data: authorizationData(accountId, estimatedWon) };
}

function settledWithin<T>(promise: Promise<T>, ms: number): Promise<T> {
  return Promise.race([
    promise,
    new Promise<never>((_, reject) =>
      setTimeout(() => reject(new Error(`still waiting after ${ms} ms: blocked on a lock`)), ms),
    ),
  ]);
}
