import { randomUUID } from "node:crypto";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { allProjections } from "../../../projections";
import { chargeUsages } from "../../../src/billing/charging/charge-usage";
import {
  correctionChargedEventId,
  usageChargedEventId,
} from "../../../src/billing/commands/deterministic-event-id";
import { GatewaySession } from "../../../src/billing/holds/gateway-session";
import { costWonOf } from "../../../src/billing/holds/hold-pricing";
import { HeartbeatWatch, settleOrphanHolds } from "../../../src/billing/holds/orphan-hold-settlement";
import { SweptHoldReserves } from "../../../src/billing/holds/swept-hold-reserves";
import { UsageOutbox } from "../../../src/billing/holds/usage-outbox";
import { createPricingReadModel } from "../../../src/billing/read-models/pricing-read-model";
import { defaultSettlementTimings } from "../../../src/kernel/limits";
import { Money } from "../../../src/kernel/money";
import type { EventData } from "../../../src/ledger/events";
import { rebuildProjections } from "../../../src/ledger/ledger-maintenance";
import type { RecordedEventOf } from "../../../src/ledger/store/event-store";
import type { PostgresEventStore } from "../../../src/ledger/store/postgres-event-store";
import { verifyProjections } from "../../../src/ledger/verify-projections";
import { type GatewayHarness, startGatewayHarness } from "../../support/gateway-harness";
import { keyLimitsSet } from "../../support/ledger-fixtures";
import { holdRowCompletionOf, logSettledHolds } from "../../support/settled-holds";
import { usageAuthorizationsOf } from "../../support/usage-authorizations";

/** A test's stand-in for a paused gateway: its session held, nothing listening to it. */
const unheard = { onLost: () => {}, onTaken: () => {} };

/**
 * C10, "what was delivered is billed": when the orphan sweep settled a request with its estimate before the
 * gateway that served it could (it was presumed dead), the gateway's settlement is recorded as a correction
 * on the same usage stream and charged for the difference exactly once; and when a JSON hold's commit was
 * lost in a database crash, the usage is still recorded. Balances, pending, the billing history, usage by
 * day and `ledger verify` all agree with what was delivered.
 */

const account = { kind: "user" as const, id: "late-settler" };
const keyId = "0f4b7c2e-1d3a-4e5f-8a9b-0c1d2e3f4a5b";
const model = "alpha-5.4-mini";

describe("late settlements become corrections", () => {
  let harness: GatewayHarness;
  let store: PostgresEventStore;
  const enqueued: string[] = [];
  const pool = () => harness.service.ledger.pool;

  /**
   * The holds' gateway (`gateway-partitioned`) paused or cut off past the sweep's judgement, its session
   * still held, until the test ends.
   */
  async function holdThePartitionedGatewaysSession(): Promise<void> {
    const session = new GatewaySession(
      pool(),
      "gateway-partitioned",
      60_000,
      pino({ level: "silent" }),
      unheard,
    );
    await session.start();
    onTestFinished(() => session.stop());
  }

  const outbox = () =>
    new UsageOutbox({
      completion: holdRowCompletionOf(pool()),
      log: { settled: (_requestId: string) => void logSettledHolds(pool(), store) },
      store,
      reserves: new SweptHoldReserves(pool()),
      charges: { enqueueCharge: (requestId) => void enqueued.push(requestId) },
      logger: pino({ level: "silent" }),
      entriesMax: 10,
      retryDelaysMs: [10],
    });

  /** A hold of ₩5 asked for on `holder`: its decision, and the request's start. */
  async function authorize(requestId: string, holder: typeof account = account, key = keyId) {
    const startedAt = new Date().toISOString();
    const [decision] = await usageAuthorizationsOf(harness.service.ledger.pool, store).authorizeUsage(
      [
        {
          eventId: randomUUID(),
          data: {
            requestId,
            keyId: key,
            account: holder,
            userId: holder.id,
            organizationId: null,
            model,
            endpoint: "chat.completions",
            streamed: true,
            startedAt,
            estimate: { inputTokensMax: 4_000, outputTokensMax: 1_024, estimatedWon: "5" },
            gatewayInstance: "gateway-partitioned",
            expiresAt: new Date(Date.now() + 600_000).toISOString(),
          },
        },
      ],
      { waitForFlush: true },
    );
    return { decision: decision!, startedAt };
  }

  async function hold(requestId: string, holder: typeof account = account, key = keyId): Promise<string> {
    const { decision, startedAt } = await authorize(requestId, holder, key);
    expect(decision.kind).toBe("held");
    return startedAt;
  }

  async function sweep(): Promise<number> {
    const watch = new HeartbeatWatch(3_600_000);
    const now = await pool().query<{ now_ms: string }>(
      "SELECT (extract(epoch FROM now()) * 1000)::bigint AS now_ms",
    );
    watch.read(Number(now.rows[0]!.now_ms) - 60_000);
    const { settledCount } = await settleOrphanHolds(
      {
        database: pool(),
        completion: holdRowCompletionOf(pool()),
        reserves: new SweptHoldReserves(pool()),
        log: { settled: (_requestId) => {} },
        store,
        pricing: createPricingReadModel(pool()),
        enqueueCharges: async () => {},
        clock: () => new Date(),
      },
      {
        presumedDeadAfterMs: 10_000,
        observationGapMaxMs: 3_600_000,
        holdAgeMinMs: 0,
        holdsPerSweepMax: 100,
        reserveMs: defaultSettlementTimings.holdLifetimeMs,
      },
      watch,
    );
    await logSettledHolds(pool(), store);
    return settledCount;
  }

  const charge = (requestIds: string[]) =>
    chargeUsages(
      {
        store,
        waiter: harness.service.waiter,
        pricing: createPricingReadModel(pool()),
        clock: () => new Date(),
        projectionWaitTimeoutMs: 10_000,
      },
      requestIds,
    );

  async function deliveredUsage(
    requestId: string,
    startedAt: string,
    tokens: EventData<"UsageRecorded">["tokens"],
    holder: typeof account = account,
    answeredBy = model,
  ): Promise<EventData<"UsageRecorded">> {
    const [pricing] = await createPricingReadModel(pool()).pricingAt([
      { model: answeredBy, organizationId: null, startedAt: new Date(startedAt) },
    ]);
    return {
      requestId,
      keyId,
      account: holder,
      userId: holder.id,
      organizationId: null,
      // A fallback that answered is the usage's model (docs/upstream-resilience.md, "Billing a fallback").
      model: answeredBy,
      endpoint: "chat.completions",
      streamed: true,
      outcome: "completed",
      tokens,
      usageSource: "upstream",
      startedAt,
      heldWon: "5",
      pendingWon: costWonOf(pricing!, tokens),
    };
  }

  const streamTypes = async (requestId: string) =>
    (await store.readStream(`usage-${requestId}`)).map((event) =>
      event.type === "UsageRecorded" && event.data.corrects ? "UsageRecorded(correction)" : event.type,
    );
  const funds = async (holder: typeof account = account) =>
    (
      await pool().query<{ balance_won: string; held_won: string; pending_won: string }>(
        "SELECT balance_won, held_won, pending_won FROM account_funds WHERE account_kind = $1 AND account_id = $2",
        [holder.kind, holder.id],
      )
    ).rows[0]!;
  const billingRow = async (requestId: string) => {
    await harness.service.waiter.waitFor(
      (await store.readStream(`usage-${requestId}`)).at(-1)!.position,
      ["billing-history", "usage-by-day", "balances"],
      10_000,
    );
    return (
      await pool().query<{
        model: string;
        amount_won: string;
        breakdown: { tokens: { output: number }; inputUsdPerMillionTokens: string };
      }>("SELECT model, amount_won, breakdown FROM projection_billing_history WHERE request_id = $1", [
        requestId,
      ])
    ).rows[0];
  };

  beforeAll(async () => {
    harness = await startGatewayHarness({ label: "late_settlement" });
    store = harness.service.ledger.store as PostgresEventStore;
    await harness.topUp(account, "1000");
  }, 60_000);
  afterAll(async () => {
    await harness?.close();
  });

  it("given a request the sweep settled with its estimate, when its gateway records the delivered usage, then a correction is recorded and charged for the difference once", async () => {
    // Given: held, then settled by the sweep (output unknown: 0)
    const before = await funds();
    const startedAt = await hold("req_corrected");
    expect(await sweep()).toBe(1);

    // When: the gateway's own settlement arrives
    const delivered = await deliveredUsage("req_corrected", startedAt, {
      input: 900,
      cached: null,
      output: 2_000,
      reasoning: null,
    });
    const writes = outbox();
    await writes.record(delivered, `key:${keyId}`);

    // Then: recorded as a correction, enqueued, and charged (both charges in one append) exactly once
    expect(await streamTypes("req_corrected")).toEqual([
      "UsageAuthorized",
      "UsageRecorded",
      "UsageRecorded(correction)",
    ]);
    expect(enqueued).toContain("req_corrected");
    const first = await charge(["req_corrected", "req_corrected"]);
    expect(first.get("req_corrected")).toMatchObject({ status: "fulfilled", value: { kind: "charged" } });
    const again = await charge(["req_corrected"]);
    expect(again.get("req_corrected")).toMatchObject({
      status: "fulfilled",
      value: { kind: "already-charged" },
    });
    expect(await streamTypes("req_corrected")).toEqual([
      "UsageAuthorized",
      "UsageRecorded",
      "UsageRecorded(correction)",
      "UsageCharged",
      "UsageCharged",
    ]);
    const stream = await store.readStream("usage-req_corrected");
    const [estimateCharge, correctionCharge] = stream.slice(3) as Extract<
      (typeof stream)[number],
      { type: "UsageCharged" }
    >[];
    // Each charge's id is derived from its request: the log's unique event ids refuse a second copy of it,
    // whatever path appends it again.
    expect(estimateCharge!.eventId).toBe(usageChargedEventId("req_corrected"));
    expect(correctionCharge!.eventId).toBe(correctionChargedEventId("req_corrected"));
    expect(correctionCharge!.data.correction?.correctsEventId).toBe(estimateCharge!.eventId);
    // The correction's amount is exactly the delivered charge minus the estimate's.
    expect(
      new Money(correctionCharge!.data.amountWon).equals(
        new Money(correctionCharge!.data.breakdown.amountWon).minus(estimateCharge!.data.amountWon),
      ),
    ).toBe(true);
    expect(correctionCharge!.data.correction?.correctedAmountWon).toBe(estimateCharge!.data.amountWon);
    expect(correctionCharge!.data.breakdown.amountWon).toBe(delivered.pendingWon);

    // The account paid for what was delivered: no hold, no pending, the delivered charge taken once.
    const after = await funds();
    expect(new Money(after.held_won).equals(before.held_won)).toBe(true);
    expect(new Money(after.pending_won).equals(before.pending_won)).toBe(true);
    expect(new Money(before.balance_won).minus(after.balance_won).equals(delivered.pendingWon!)).toBe(true);
    const row = await billingRow("req_corrected");
    expect(new Money(row!.amount_won).equals(delivered.pendingWon!)).toBe(true);
    expect(row!.breakdown.tokens.output).toBe(2_000);
  });

  it("given a request the sweep settled, then what its estimate did not use stays held until its gateway's correction takes it: no other request spends it meanwhile", async () => {
    // Given an account with room for one ₩5 hold, and that hold settled by the sweep at its estimate
    const holder = { kind: "user" as const, id: "reserve-keeper" };
    await harness.topUp(holder, "5.5");
    // Its gateway paused, or cut off, past the sweep's judgement: its session still held
    await holdThePartitionedGatewaysSession();
    const startedAt = await hold("req_reserved", holder);
    expect(await sweep()).toBe(1);
    const [, estimate] = await store.readStream("usage-req_reserved");
    const estimatedWon = (estimate as RecordedEventOf<"UsageRecorded">).data.pendingWon!;

    // Then the hold still counts whole: its estimate pending, the rest held for the gateway's correction
    const swept = await funds(holder);
    expect(new Money(swept.pending_won).equals(estimatedWon)).toBe(true);
    expect(new Money(swept.held_won).equals(new Money("5").minus(estimatedWon))).toBe(true);
    // and a request the money the estimate did not bill would have let in is refused
    const meanwhile = await authorize("req_spending_the_reserve", holder);
    expect(meanwhile.decision).toMatchObject({ kind: "refused", reason: "funds" });

    // When the gateway's own settlement arrives: more output than the sweep knew of, within the hold
    const delivered = await deliveredUsage(
      "req_reserved",
      startedAt,
      { input: 900, cached: null, output: 1_000, reasoning: null },
      holder,
    );
    expect(new Money(delivered.pendingWon!).lessThanOrEqualTo("5")).toBe(true);
    await outbox().record(delivered, `key:${keyId}`);

    // Then the correction took what it bills and freed the rest: nothing held, the delivered cost pending
    const corrected = await funds(holder);
    expect({ held: new Money(corrected.held_won).toFixed(), pending: corrected.pending_won }).toEqual({
      held: "0",
      pending: new Money(delivered.pendingWon!).toFixed(6),
    });
    const reserves = await pool().query(
      "SELECT 1 FROM swept_hold_reserves WHERE request_id = 'req_reserved'",
    );
    expect(reserves.rowCount).toBe(0);
  });

  it.each([
    ["monthly", { monthlySpendLimitWon: "5" }, "monthly-spend", "5e0c1d2b-3a4f-4b6c-8d7e-9f0a1b2c3d4e"],
    ["total", { totalSpendLimitWon: "5" }, "total-spend", "7d2e4f6a-8b0c-4d1e-9f3a-5b7c9d1e3f5a"],
  ] as const)(
    "given a key with a %s spend limit, then what the sweep keeps back of its swept hold counts against the key until the correction",
    async (limit, limits, refusal, limitedKey) => {
      // Given a key limited to ₩5, and its ₩5 hold settled by the sweep while its gateway is paused
      const holder = { kind: "user" as const, id: `reserve-of-a-${limit}-limited-key` };
      const requestId = `req_${limit}_limited_reserved`;
      await harness.topUp(holder, "100");
      await store.append(
        keyLimitsSet(limitedKey, holder, limits, {
          actor: `user:${holder.id}`,
          occurredAt: new Date().toISOString(),
        }),
      );
      await holdThePartitionedGatewaysSession();
      const startedAt = await hold(requestId, holder, limitedKey);
      expect(await sweep()).toBe(1);

      // Then the key still counts the whole hold (its estimate pending, the rest kept back), and its next
      // request is refused by its limit: without what is kept back, ₩4.65 of the ₩5 would look unspent
      const spendOf = (key: string) =>
        pool().query<{ held_won: string; pending_won: string }>(
          "SELECT held_won::text, pending_won::text FROM key_spend WHERE key_id = $1",
          [key],
        );
      const [spend] = (await spendOf(limitedKey)).rows;
      expect(new Money(spend!.held_won).plus(spend!.pending_won).toFixed()).toBe("5");
      const meanwhile = await authorize(`req_${limit}_limited_meanwhile`, holder, limitedKey);
      expect(meanwhile.decision).toMatchObject({ kind: "refused", reason: refusal, limit: "5" });

      // When the gateway's correction arrives, billing less than the hold
      const delivered = await deliveredUsage(
        requestId,
        startedAt,
        { input: 900, cached: null, output: 100, reasoning: null },
        holder,
      );
      await outbox().record({ ...delivered, keyId: limitedKey }, `key:${limitedKey}`);

      // Then the key counts what was delivered, and nothing held
      const [corrected] = (await spendOf(limitedKey)).rows;
      expect({ held: new Money(corrected!.held_won).toFixed(), pending: corrected!.pending_won }).toEqual({
        held: "0",
        pending: new Money(delivered.pendingWon!).toFixed(6),
      });
    },
  );

  it("given the estimate already charged, when the gateway's usage arrives, then only the difference is charged", async () => {
    const before = await funds();
    const startedAt = await hold("req_charged_first");
    expect(await sweep()).toBe(1);
    await charge(["req_charged_first"]);
    expect(await streamTypes("req_charged_first")).toEqual([
      "UsageAuthorized",
      "UsageRecorded",
      "UsageCharged",
    ]);

    const delivered = await deliveredUsage("req_charged_first", startedAt, {
      input: 1_200,
      cached: null,
      output: 40,
      reasoning: null,
    });
    await outbox().record(delivered, `key:${keyId}`);
    await charge(["req_charged_first"]);

    expect(await streamTypes("req_charged_first")).toEqual([
      "UsageAuthorized",
      "UsageRecorded",
      "UsageCharged",
      "UsageRecorded(correction)",
      "UsageCharged",
    ]);
    const after = await funds();
    expect(new Money(before.balance_won).minus(after.balance_won).equals(delivered.pendingWon!)).toBe(true);
    expect(new Money(after.pending_won).equals(before.pending_won)).toBe(true);
  });

  it("given a request the sweep settled, when its gateway voids it (nothing was delivered), then the estimate is refunded in full", async () => {
    const before = await funds();
    await hold("req_voided_late");
    expect(await sweep()).toBe(1);

    await outbox().void(
      { requestId: "req_voided_late", account, releasedWon: "5", reason: "upstream-failed" },
      `key:${keyId}`,
    );
    await charge(["req_voided_late"]);

    const stream = await store.readStream("usage-req_voided_late");
    const correction = stream[2];
    expect(correction?.type === "UsageRecorded" && correction.data).toMatchObject({
      outcome: "upstream-failed",
      tokens: { input: 0, output: 0 },
      heldWon: "0",
    });
    const after = await funds();
    for (const column of ["balance_won", "held_won", "pending_won"] as const)
      expect(new Money(after[column]).equals(before[column]), column).toBe(true);
  });

  it("given a hold whose commit was lost with a database crash, when the usage is recorded, then it is recorded without a hold", async () => {
    const before = await funds();
    const startedAt = new Date().toISOString();
    const delivered = await deliveredUsage("req_hold_lost", startedAt, {
      input: 100,
      cached: null,
      output: 100,
      reasoning: null,
    });

    await outbox().record(delivered, `key:${keyId}`);
    await charge(["req_hold_lost"]);

    const stream = await store.readStream("usage-req_hold_lost");
    expect(stream.map((event) => event.type)).toEqual(["UsageRecorded", "UsageCharged"]);
    expect(stream[0]?.type === "UsageRecorded" && stream[0].data.heldWon).toBeNull();
    const after = await funds();
    expect(new Money(before.balance_won).minus(after.balance_won).equals(delivered.pendingWon!)).toBe(true);
    expect(new Money(after.held_won).equals(before.held_won)).toBe(true);
  });

  it("given a request the sweep settled as the model asked for, when its gateway's usage was answered by a fallback, then the correction is charged at the fallback's price, what the gateway pended, and the billing history names the fallback", async () => {
    const fallback = "alpha-5.4";
    const before = await funds();
    const startedAt = await hold("req_fallback_corrected");
    expect(await sweep()).toBe(1);

    const delivered = await deliveredUsage(
      "req_fallback_corrected",
      startedAt,
      { input: 3_000, cached: null, output: 700, reasoning: null },
      account,
      fallback,
    );
    await outbox().record(delivered, `key:${keyId}`);
    await charge(["req_fallback_corrected"]);

    const [fallbackPricing] = await createPricingReadModel(pool()).pricingAt([
      { model: fallback, organizationId: null, startedAt: new Date(startedAt) },
    ]);
    const correctionCharge = (await store.readStream("usage-req_fallback_corrected")).at(-1);
    expect(correctionCharge?.type === "UsageCharged" && correctionCharge.data).toMatchObject({
      model: fallback,
      correction: {},
      breakdown: {
        inputUsdPerMillionTokens: fallbackPricing!.unitPrices.inputUsdPerMillionTokens.toFixed(),
        amountWon: delivered.pendingWon,
      },
    });
    // The account paid what the gateway pended for what the fallback delivered, nothing held or pending.
    const after = await funds();
    expect(new Money(before.balance_won).minus(after.balance_won).equals(delivered.pendingWon!)).toBe(true);
    expect(new Money(after.pending_won).equals(before.pending_won)).toBe(true);
    const row = await billingRow("req_fallback_corrected");
    expect(row!.model).toBe(fallback);
    expect(new Money(row!.amount_won).equals(delivered.pendingWon!)).toBe(true);
    expect(row!.breakdown.inputUsdPerMillionTokens).toBe(
      fallbackPricing!.unitPrices.inputUsdPerMillionTokens.toFixed(),
    );
  });

  it("given all of the above, then ledger verify finds the projections equal to a fold of the log, and a rebuild in SQL agrees", async () => {
    await billingRow("req_hold_lost");
    const context = { pool: pool(), store, projections: allProjections };
    expect(await verifyProjections(context)).toEqual([]);
    const usageByDay = async () =>
      (
        await pool().query(
          "SELECT day, requests, amount_won, input_tokens, output_tokens FROM projection_usage_by_day WHERE account_id = $1 ORDER BY day, model",
          [account.id],
        )
      ).rows;
    const live = await usageByDay();
    // Five requests, each counted once, whatever their corrections.
    expect(live.reduce((sum, row) => sum + Number(row.requests), 0)).toBe(5);
    await rebuildProjections(context, { batchSizeMax: 1_000 });
    expect(await usageByDay()).toEqual(live);
    expect(await verifyProjections(context)).toEqual([]);
  }, 60_000);
});
