import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allProjections } from "../../projections";
import { inlineFundsName } from "../../src/ledger/inline-funds";
import { rebuildProjections } from "../../src/ledger/ledger-maintenance";
import { verifyProjections } from "../../src/ledger/verify-projections";
import { topUp } from "../support/ledger-fixtures";
import { type LedgerHarness, openLedgerHarness } from "../support/ledger-harness";

/** The inline funds are derived like any projection: verify compares them with the log, rebuild restores. */
describe("inline funds in ledger maintenance", () => {
  let harness: LedgerHarness;
  const context = () => ({
    pool: harness.ledger.pool,
    store: harness.store,
    projections: allProjections,
  });

  beforeAll(async () => {
    harness = await openLedgerHarness("inline_funds");
    await harness.append({
      streamId: "account-user-ada",
      expectedVersion: "any",
      events: [topUp("ada", "50", "t")],
    });
    // An open hold in the log, as a release before hold rows appended it (its own statement, unsettled).
    const startedAt = new Date().toISOString();
    await harness.append({
      streamId: "usage-req_inline",
      expectedVersion: "no-stream",
      events: [
        {
          eventId: "5d0c1f4e-8c4b-4d0e-9a57-1c2b3d4e5f61",
          event: {
            type: "UsageAuthorized",
            data: {
              requestId: "req_inline",
              keyId: "6a1f4f5e-8c4b-4d0e-9a57-1c2b3d4e5f60",
              account: { kind: "user", id: "ada" },
              userId: "ada",
              organizationId: null,
              model: "alpha-5.4-mini",
              endpoint: "responses",
              streamed: false,
              startedAt,
              estimate: { inputTokensMax: 100, outputTokensMax: 100, estimatedWon: "7.5" },
              gatewayInstance: "gateway-test",
              expiresAt: startedAt,
              holdWon: "7.5",
            },
            metadata: { actor: "key:x", occurredAt: startedAt },
          },
        },
      ],
    });
    await harness.project();
  }, 60_000);
  afterAll(async () => {
    await harness?.dispose();
  });

  it("given funds edited behind the log's back, then verify names them and a rebuild restores them", async () => {
    expect(await verifyProjections(context())).toEqual([]);

    await harness.ledger.pool.query("UPDATE account_funds_settled SET held_won = 0, balance_won = 70");
    await harness.ledger.pool.query("UPDATE account_funds_authorized SET authorized_won = 0");
    await harness.ledger.pool.query("DELETE FROM open_holds");

    expect(await verifyProjections(context())).toEqual([
      expect.objectContaining({
        projection: inlineFundsName,
        key: "user:ada",
        column: "balance_won",
        live: "70",
        expected: "50",
      }),
      expect.objectContaining({
        projection: inlineFundsName,
        key: "user:ada",
        column: "held_won",
        live: "0",
        expected: "7.5",
      }),
      expect.objectContaining({
        projection: inlineFundsName,
        table: "open_holds",
        key: "req_inline",
        kind: "missing",
      }),
    ]);
    await rebuildProjections(context(), { batchSizeMax: 1_000 });
    expect(await verifyProjections(context())).toEqual([]);
  });
});
