import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allProjections } from "../../projections";
import { rowEventOf } from "../../src/billing/holds/hold-row-completion";
import { holdStatementInputOf } from "../../src/billing/holds/postgres-usage-authorizations";
import type { UsageAuthorizationDecision } from "../../src/billing/holds/usage-authorizations";
import type { ApiKeyLimits, EventData } from "../../src/ledger/events";
import { inlineFundsName } from "../../src/ledger/inline-funds";
import { rebuildProjections } from "../../src/ledger/ledger-maintenance";
import type { EventToAppend } from "../../src/ledger/store/event-store";
import type { PostgresEventStore } from "../../src/ledger/store/postgres-event-store";
import { verifyProjections } from "../../src/ledger/verify-projections";
import { metadata, topUp } from "../support/ledger-fixtures";
import { type LedgerHarness, openLedgerHarness } from "../support/ledger-harness";
import { holdRowCompletionOf, logSettledHolds } from "../support/settled-holds";
import { usageAuthorizationsOf } from "../support/usage-authorizations";

/**
 * Per-key limits as events: given the log, then the inline key tables (limits, spend per Seoul month,
 * requests this minute) and the holds the authorization statement grants or refuses.
 */

const account = { kind: "user", id: "kim" } as const;
const limitedKey = "0b6a3c1e-2f4d-4a5b-8c6d-7e8f9a0b1c2d";
const otherKey = "1c7b4d2f-3a5e-4b6c-9d7e-8f9a0b1c2d3e";

function limitsSet(keyId: string, limits: Partial<ApiKeyLimits>, eventId: string): EventToAppend {
  return {
    eventId,
    event: {
      type: "ApiKeyLimitsSet",
      data: {
        keyId,
        owner: account,
        monthlySpendLimitWon: null,
        totalSpendLimitWon: null,
        rateLimitRequestsPerMinute: null,
        ...limits,
      },
      metadata: metadata({ actor: "user:kim" }),
    },
  };
}

let requestCounter = 0;
function authorization(keyId: string, estimatedWon: string, startedAt = new Date().toISOString()) {
  requestCounter += 1;
  const requestId = `req_limits_${requestCounter}`;
  const data: Omit<EventData<"UsageAuthorized">, "holdWon"> = {
    requestId,
    keyId,
    account,
    userId: "kim",
    organizationId: null,
    model: "alpha-5.4-mini",
    endpoint: "chat.completions",
    streamed: false,
    startedAt,
    estimate: { inputTokensMax: 10, outputTokensMax: 10, estimatedWon },
    gatewayInstance: "gateway-test",
    expiresAt: startedAt,
  };
  return {
    eventId: crypto.randomUUID(),
    data,
  };
}

describe("per-key limits in the ledger", () => {
  let harness: LedgerHarness;
  const store = () => harness.store as PostgresEventStore;
  const context = () => ({ pool: harness.ledger.pool, store: harness.store, projections: allProjections });
  const authorize = (...requests: ReturnType<typeof authorization>[]) =>
    usageAuthorizationsOf(harness.ledger.pool, store()).authorizeUsage(requests);

  /** Completes a hold row with its settlement and logs it, as the gateway and the log writer do. */
  async function settle(
    requestId: string,
    event: Extract<EventToAppend["event"], { type: "UsageRecorded" | "UsageVoided" }>,
  ) {
    const completed = await holdRowCompletionOf(harness.ledger.pool).complete({
      requestId,
      settlement: rowEventOf(crypto.randomUUID(), event),
      pendingWon: event.type === "UsageRecorded" ? (event.data.pendingWon ?? "0") : "0",
    });
    expect(completed).toBe(true);
    await logSettledHolds(harness.ledger.pool, store());
  }

  async function spendOf(keyId: string) {
    const result = await harness.ledger.pool.query<{
      month: string;
      held_won: string;
      pending_won: string;
      charged_won: string;
    }>(
      `SELECT month, trim_scale(held_won)::text AS held_won, trim_scale(pending_won)::text AS pending_won,
              trim_scale(charged_won)::text AS charged_won
       FROM key_spend WHERE key_id = $1 ORDER BY month`,
      [keyId],
    );
    return result.rows;
  }

  beforeAll(async () => {
    harness = await openLedgerHarness("key_limits_inline");
    await harness.append({
      streamId: "account-user-kim",
      expectedVersion: "any",
      events: [topUp("kim", "1000", "t")],
    });
  }, 60_000);
  afterAll(async () => {
    await harness?.dispose();
  });

  it("given two ApiKeyLimitsSet events on a key, then the key's limits are the latest", async () => {
    await harness.append({
      streamId: `apikey-${limitedKey}`,
      expectedVersion: "any",
      events: [
        limitsSet(limitedKey, { totalSpendLimitWon: "999" }, "6f1e2d3c-4b5a-4a69-8877-665544332211"),
        limitsSet(limitedKey, { monthlySpendLimitWon: "30" }, "7a2f3e4d-5c6b-4b7a-9988-776655443322"),
      ],
    });

    const limits = await harness.ledger.pool.query(
      `SELECT trim_scale(monthly_spend_limit_won)::text AS monthly, total_spend_limit_won AS total,
              rate_limit_requests_per_minute AS rate FROM key_limits WHERE key_id = $1`,
      [limitedKey],
    );
    expect(limits.rows).toEqual([{ monthly: "30", total: null, rate: null }]);
  });

  it("given a ₩30 monthly limit, when holds are asked for, then they stop at the limit and name it", async () => {
    const [first] = await authorize(authorization(limitedKey, "20"));
    // In one batch: the second finds room under the limit and is held whole, the third finds none.
    const [second, third] = await authorize(authorization(limitedKey, "20"), authorization(limitedKey, "20"));

    expect(first).toMatchObject({ kind: "held", holdWon: "20" });
    expect(second).toMatchObject({ kind: "held", holdWon: "20" });
    expect(third).toEqual<UsageAuthorizationDecision>({
      kind: "refused",
      reason: "monthly-spend",
      limit: "30",
      availableWon: expect.any(String),
    });
  });

  it("given the limited key at its limit, when another key of the account asks, then it is held", async () => {
    const [decision] = await authorize(authorization(otherKey, "20"));
    expect(decision).toMatchObject({ kind: "held", holdWon: "20" });
  });

  it("given a batch of holds for a limited key and a key without limits, then only the limited key's usage is looked up", async () => {
    // Calls counted by PostgreSQL in this transaction alone (track_functions), which is rolled back.
    const client = await harness.ledger.pool.connect();
    try {
      await client.query("BEGIN");
      await client.query("SET LOCAL track_functions = 'pl'");
      const requests = [
        authorization(limitedKey, "1"),
        authorization(otherKey, "1"),
        authorization(otherKey, "1"),
        authorization(limitedKey, "1"),
        authorization(otherKey, "1"),
      ];
      const decided = await client.query("SELECT * FROM ledger_authorize_usage($1::json)", [
        JSON.stringify(requests.map((request, ordinal) => holdStatementInputOf(request, ordinal))),
      ]);
      expect(decided.rows).toHaveLength(requests.length);
      const lookups = await client.query<{ calls: string }>(
        "SELECT calls::text FROM pg_stat_xact_user_functions WHERE funcname = 'ledger_key_limit_usage'",
      );
      expect(lookups.rows).toEqual([{ calls: "2" }]);
    } finally {
      await client.query("ROLLBACK");
      client.release();
    }
  });

  it("given holds posted, voided and charged, then the key's spend moves as its account's funds do", async () => {
    const [held] = await authorize(authorization(otherKey, "5"));
    expect(held?.kind).toBe("held");
    const requestId = `req_limits_${requestCounter}`;
    const startedAt = new Date().toISOString();
    const before = await spendOf(otherKey);
    await settle(requestId, {
      type: "UsageRecorded",
      data: {
        requestId,
        keyId: otherKey,
        account,
        userId: "kim",
        organizationId: null,
        model: "alpha-5.4-mini",
        endpoint: "chat.completions",
        streamed: false,
        outcome: "completed",
        tokens: { input: 10, cached: 0, output: 10, reasoning: 0 },
        usageSource: "upstream",
        startedAt,
        heldWon: "5",
        pendingWon: "1.25",
      },
      metadata: metadata({ correlationId: requestId }),
    });
    await harness.append({
      streamId: `usage-${requestId}`,
      expectedVersion: 1,
      events: [
        {
          eventId: crypto.randomUUID(),
          event: {
            type: "UsageCharged",
            data: {
              requestId,
              keyId: otherKey,
              account,
              model: "alpha-5.4-mini",
              endpoint: "chat.completions",
              startedAt,
              amountWon: "1.25",
              releasedPendingWon: "1.25",
              breakdown: {
                tokens: { input: 10, cached: 0, output: 10, reasoning: 0 },
                inputUsdPerMillionTokens: "1",
                cachedInputUsdPerMillionTokens: "0.1",
                outputUsdPerMillionTokens: "1",
                usd: "0.00002",
                fxRateKrwPerUsd: "1400",
                fxRateDate: "2026-11-19",
                discountRate: "0",
                amountWon: "1.25",
                usageSource: "upstream",
              },
            },
            metadata: metadata(),
          },
        },
      ],
    });
    // The first hold on the other key is voided: a void names no key, its authorization does.
    await settle("req_limits_4", {
      type: "UsageVoided",
      data: { requestId: "req_limits_4", account, releasedWon: "20", reason: "upstream-failed" },
      metadata: metadata({ correlationId: "req_limits_4" }),
    });

    expect(before).toEqual([
      { month: expect.any(String), held_won: "25", pending_won: "0", charged_won: "0" },
    ]);
    expect(await spendOf(otherKey)).toEqual([
      { month: before[0]!.month, held_won: "0", pending_won: "0", charged_won: "1.25" },
    ]);
  });

  it("given a usage started in another Seoul month, then it counts in that month and in the total only", async () => {
    await harness.append({
      streamId: `apikey-${otherKey}`,
      expectedVersion: "any",
      events: [
        limitsSet(
          otherKey,
          { monthlySpendLimitWon: "100", totalSpendLimitWon: "8" },
          "8b3a4f5e-6d7c-4c8b-aa99-887766554433",
        ),
      ],
    });
    // 2026-01-31T15:30Z is 2026-02-01 00:30 in Seoul.
    const [lastMonth] = await authorize(authorization(otherKey, "6", "2026-01-31T15:30:00.000Z"));
    const [now] = await authorize(authorization(otherKey, "6"));

    expect(lastMonth).toMatchObject({ kind: "held", holdWon: "6" });
    expect((await spendOf(otherKey))[0]).toMatchObject({ month: "2026-02", held_won: "6" });
    // ₩1.25 charged + ₩6 held of ₩8 in total: room left, so held whole; then none left.
    expect(now).toMatchObject({ kind: "held", holdWon: "6" });
    expect(await authorize(authorization(otherKey, "6"))).toEqual([
      { kind: "refused", reason: "total-spend", limit: "8", availableWon: expect.any(String) },
    ]);
  });

  it("given a rate limit of 2 per minute, when a batch asks for 3 holds, then the third is refused", async () => {
    const ratedKey = "2d8c5e3a-4b6f-4c7d-8e9f-a0b1c2d3e4f5";
    await harness.append({
      streamId: `apikey-${ratedKey}`,
      expectedVersion: "any",
      events: [
        limitsSet(ratedKey, { rateLimitRequestsPerMinute: 2 }, "9c4b5a6f-7e8d-4d9c-bbaa-998877665544"),
      ],
    });

    const decisions = await authorize(
      authorization(ratedKey, "1"),
      authorization(ratedKey, "1"),
      authorization(ratedKey, "1"),
    );

    expect(decisions.map((decision) => decision.kind)).toEqual(["held", "held", "refused"]);
    expect(decisions[2]).toMatchObject({ reason: "rate", limit: "2" });
    // The two holds are rows until logged, each counted in the minute of its grant.
    const window = await harness.ledger.pool.query(
      "SELECT count(*)::int AS requests FROM request_holds WHERE key_id = $1 AND placed_at >= date_trunc('minute', now())",
      [ratedKey],
    );
    expect(window.rows).toEqual([{ requests: 2 }]);
  });

  it("given ApiKeyLimitsSet v2 naming models and a v1 event of an earlier release, then the key's allowed models fold, null for v1", async () => {
    const modelsKey = "4fae7a5c-6d8b-4e9f-8a1b-c2d3e4f5a6b7";
    const earlierKey = "5abf8b6d-7e9c-4f0a-9b2c-d3e4f5a6b7c8";
    await harness.append({
      streamId: `apikey-${modelsKey}`,
      expectedVersion: "any",
      events: [
        limitsSet(modelsKey, { allowedModels: ["alpha"] }, "be6d7c8b-9a0f-4fbe-9dcc-bbaa99887766"),
        limitsSet(
          modelsKey,
          { allowedModels: ["alpha", "beta-3-flash"], rateLimitRequestsPerMinute: 5 },
          "cf7e8d9c-0b1a-4acf-8edd-ccbb00998877",
        ),
      ],
    });
    // As a release before v2 wrote it: schema version 1, no allowedModels in its data.
    await harness.ledger.pool.query(
      `INSERT INTO ledger_events (transaction_order, event_id, stream_id, stream_version, type, schema_version, data, metadata)
       VALUES (pg_current_xact_id()::text::bigint, $1, $2, 0, 'ApiKeyLimitsSet', 1, $3, $4)`,
      [
        "d08f9e0d-1c2b-4bd0-9fee-ddcc11009988",
        `apikey-${earlierKey}`,
        JSON.stringify({
          keyId: earlierKey,
          owner: account,
          monthlySpendLimitWon: "70",
          totalSpendLimitWon: null,
          rateLimitRequestsPerMinute: null,
        }),
        JSON.stringify(metadata({ actor: "user:kim" })),
      ],
    );

    const limits = await harness.ledger.pool.query(
      "SELECT key_id::text, allowed_models, rate_limit_requests_per_minute AS rate FROM key_limits WHERE key_id = ANY($1::uuid[]) ORDER BY key_id",
      [[modelsKey, earlierKey]],
    );
    expect(limits.rows).toEqual([
      { key_id: modelsKey, allowed_models: ["alpha", "beta-3-flash"], rate: 5 },
      { key_id: earlierKey, allowed_models: null, rate: null },
    ]);
    const [earlier] = await harness.store.readStream(`apikey-${earlierKey}`);
    expect(earlier).toMatchObject({
      type: "ApiKeyLimitsSet",
      data: { allowedModels: null, monthlySpendLimitWon: "70" },
    });
  });

  it("given the key tables edited behind the log's back, then verify names them and a rebuild restores them", async () => {
    await harness.project();
    expect(await verifyProjections(context())).toEqual([]);

    await harness.ledger.pool.query("UPDATE key_spend_settled SET charged_won = 0 WHERE key_id = $1", [
      otherKey,
    ]);
    await harness.ledger.pool.query(
      "UPDATE key_limits SET monthly_spend_limit_won = 1000 WHERE key_id = $1",
      [limitedKey],
    );
    await harness.ledger.pool.query("DELETE FROM key_request_windows");
    await harness.ledger.pool.query(
      "UPDATE key_limits SET allowed_models = '{alpha-5.5}' WHERE key_id = '4fae7a5c-6d8b-4e9f-8a1b-c2d3e4f5a6b7'",
    );

    const differences = await verifyProjections(context());
    expect(differences).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          projection: inlineFundsName,
          table: "key_spend",
          column: "charged_won",
          live: "0",
          expected: "1.25",
        }),
        expect.objectContaining({
          table: "key_limits",
          key: limitedKey,
          column: "monthly_spend_limit_won",
          live: "1000",
          expected: "30",
        }),
        expect.objectContaining({ table: "key_request_windows", column: "requests", live: "(none)" }),
        expect.objectContaining({
          table: "key_limits",
          column: "allowed_models",
          live: "{alpha-5.5}",
          expected: "{alpha,beta-3-flash}",
        }),
      ]),
    );
    await rebuildProjections(context(), { batchSizeMax: 1_000 });
    expect(await verifyProjections(context())).toEqual([]);
  });
});
