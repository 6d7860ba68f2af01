import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rowEventOf } from "../../../src/billing/holds/hold-row-completion";
import type { UsageAuthorizationRequest } from "../../../src/billing/holds/usage-authorizations";
import { type EventData, parseLedgerEvent } from "../../../src/ledger/events";
import { topUp } from "../../support/ledger-fixtures";
import { type LedgerHarness, openLedgerHarness } from "../../support/ledger-harness";
import { holdRowCompletionOf, logSettledHolds } from "../../support/settled-holds";
import { usageAuthorizationsOf } from "../../support/usage-authorizations";

/**
 * A hold row keeps of its settlement only what its columns do not say, and the log writer adds the rest back
 * from them: the logged settlement must be the one the gateway validated, and a row an earlier release
 * completed with its whole settlement must be logged with that very event.
 */

const account = { kind: "user" as const, id: "정산-columns" };

function holdOf(requestId: string): UsageAuthorizationRequest {
  return {
    eventId: randomUUID(),
    data: {
      requestId,
      keyId: randomUUID(),
      account,
      userId: account.id,
      organizationId: null,
      model: "alpha-5.4-mini",
      endpoint: "chat.completions",
      streamed: false,
      startedAt: "2026-11-28T14:59:59.999Z",
      estimate: { inputTokensMax: 1_000, outputTokensMax: 100, estimatedWon: "3.25" },
      gatewayInstance: "gateway-settlement-columns",
      expiresAt: "2026-11-28T15:09:59.999Z",
    },
  };
}

/** The usage the gateway records for a hold: answered by a fallback model, after two attempts. */
function usageOf(hold: UsageAuthorizationRequest): EventData<"UsageRecorded"> {
  const { requestId, keyId, userId, organizationId, endpoint, streamed, startedAt } = hold.data;
  return {
    requestId,
    keyId,
    account,
    userId,
    organizationId,
    model: "beta-2",
    endpoint,
    streamed,
    outcome: "completed",
    tokens: { input: 812, cached: null, output: 64, reasoning: 0 },
    usageSource: "upstream",
    startedAt,
    heldWon: "3.25",
    pendingWon: "1.0415",
    attempts: [
      { endpoint: "primary", model: "alpha-5.4-mini", status: 503, error: "status", durationMs: 41 },
      { endpoint: "fallback", model: "beta-2", status: 200, error: null, durationMs: 388 },
    ],
  };
}

describe("a hold row's settlement", () => {
  let harness: LedgerHarness;

  beforeAll(async () => {
    harness = await openLedgerHarness("hold_row_settlement");
    await harness.append({
      streamId: `account-user-${account.id}`,
      expectedVersion: "no-stream",
      events: [topUp(account.id, "1000", "settlement columns")],
    });
  }, 60_000);
  afterAll(async () => {
    await harness?.dispose();
  });

  async function place(hold: UsageAuthorizationRequest) {
    const [decision] = await usageAuthorizationsOf(harness.ledger.pool, harness.store).authorizeUsage([hold]);
    expect(decision).toMatchObject({ kind: "held", holdWon: "3.25" });
  }

  async function keptSettlementOf(requestId: string) {
    const kept = await harness.ledger.pool.query<{
      settlement_event: Record<string, Record<string, unknown>>;
    }>("SELECT settlement_event FROM request_holds WHERE request_id = $1", [requestId]);
    return kept.rows[0]!.settlement_event;
  }

  it("given a usage, then its row keeps what its columns do not say, and the log gets the usage the gateway validated", async () => {
    const hold = holdOf(`req_settled_${randomUUID()}`);
    await place(hold);
    const eventId = randomUUID();
    const usage = {
      type: "UsageRecorded" as const,
      data: usageOf(hold),
      metadata: {
        actor: `key:${hold.data.keyId}`,
        correlationId: hold.data.requestId,
        occurredAt: "2026-11-28T15:00:01.234Z",
      },
    };

    const completed = await holdRowCompletionOf(harness.ledger.pool).complete({
      requestId: hold.data.requestId,
      settlement: rowEventOf(eventId, usage),
      pendingWon: "1.0415",
    });

    expect(completed).toBe(true);
    const kept = await keptSettlementOf(hold.data.requestId);
    expect(Object.keys(kept.data!).sort()).toEqual(
      ["attempts", "heldWon", "model", "outcome", "pendingWon", "tokens", "usageSource"].sort(),
    );
    expect(kept.metadata).toEqual({ actor: usage.metadata.actor, occurredAt: usage.metadata.occurredAt });

    await logSettledHolds(harness.ledger.pool, harness.store);
    const [, logged] = await harness.store.readStream(`usage-${hold.data.requestId}`);
    expect(logged).toMatchObject({ eventId, type: "UsageRecorded", streamVersion: 1 });
    expect(logged!.data).toEqual(usage.data);
    expect(logged!.metadata).toEqual(usage.metadata);
    expect(() => parseLedgerEvent(logged!)).not.toThrow();
  });

  it("given a void, then the log gets the void the gateway validated", async () => {
    const hold = holdOf(`req_voided_${randomUUID()}`);
    await place(hold);
    const voided = {
      type: "UsageVoided" as const,
      data: {
        requestId: hold.data.requestId,
        account,
        releasedWon: "3.25",
        reason: "upstream-failed" as const,
        attempts: [
          {
            endpoint: "primary",
            model: "alpha-5.4-mini",
            status: null,
            error: "timeout" as const,
            durationMs: 30_000,
          },
        ],
      },
      metadata: {
        actor: "system:test",
        correlationId: hold.data.requestId,
        occurredAt: "2026-11-28T15:00:31.000Z",
      },
    };

    await holdRowCompletionOf(harness.ledger.pool).complete({
      requestId: hold.data.requestId,
      settlement: rowEventOf(randomUUID(), voided),
      pendingWon: "0",
    });

    expect(Object.keys((await keptSettlementOf(hold.data.requestId)).data!).sort()).toEqual([
      "attempts",
      "reason",
      "releasedWon",
    ]);
    await logSettledHolds(harness.ledger.pool, harness.store);
    const [, logged] = await harness.store.readStream(`usage-${hold.data.requestId}`);
    expect(logged!.data).toEqual(voided.data);
    expect(logged!.metadata).toEqual(voided.metadata);
  });

  it("given a row an earlier release completed with its whole settlement, then the log gets that very event", async () => {
    const hold = holdOf(`req_kept_whole_${randomUUID()}`);
    await place(hold);
    // As the earlier release completed rows: the whole event, with a correlation of its own.
    const whole = {
      eventId: randomUUID(),
      type: "UsageRecorded",
      schemaVersion: 3,
      data: { ...usageOf(hold), userId: "다른-사용자" },
      metadata: { actor: "system:earlier", correlationId: "job-17", occurredAt: "2026-11-28T15:00:02.000Z" },
    };
    await harness.ledger.pool.query(
      `UPDATE request_holds SET settlement_event = $2, pending_won = 1.0415, settled_at = now()
       WHERE request_id = $1`,
      [hold.data.requestId, JSON.stringify(whole)],
    );

    await logSettledHolds(harness.ledger.pool, harness.store);

    const [, logged] = await harness.store.readStream(`usage-${hold.data.requestId}`);
    expect({
      eventId: logged!.eventId,
      type: logged!.type,
      schemaVersion: 3,
      data: logged!.data,
      metadata: logged!.metadata,
    }).toEqual(whole);
  });
});
