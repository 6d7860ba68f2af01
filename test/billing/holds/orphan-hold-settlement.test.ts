import { randomUUID } from "node:crypto";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GatewaySession } from "../../../src/billing/holds/gateway-session";
import { HeartbeatWatch, settleOrphanHolds } from "../../../src/billing/holds/orphan-hold-settlement";
import { SweptHoldReserves } from "../../../src/billing/holds/swept-hold-reserves";
import { UsageOutbox } from "../../../src/billing/holds/usage-outbox";
import { createPricingReadModel } from "../../../src/billing/read-models/pricing-read-model";
import { billingLimits, defaultSettlementTimings } from "../../../src/kernel/limits";
import { Money } from "../../../src/kernel/money";
import type { PostgresEventStore } from "../../../src/ledger/store/postgres-event-store";
import { type GatewayHarness, startGatewayHarness } from "../../support/gateway-harness";
import { holdRowCompletionOf, logSettledHolds } from "../../support/settled-holds";
import { usageAuthorizationsOf } from "../../support/usage-authorizations";
import { modelPriceSet } from "../billing-ledger-fixtures";

/** A test's stand-in for a paused gateway: its session held, nothing listening to it. */
const unheard = { onLost: () => {}, onTaken: () => {} };

/**
 * C10 orphans: a hold whose gateway process stopped beating, or that outlived its request, is settled by
 * the sweep as an interrupted, estimated usage — once, whoever else tries — and, once its row is logged,
 * its charge enqueued; the gateway's own settlement arriving after it becomes a correction, never dropped.
 * The sweep judges only after watching the heartbeats for a whole window itself.
 */

/** A watch that has been reading the heartbeats for a minute already (gaps up to an hour allowed). */
async function longWatch(pool: { query(text: string): Promise<{ rows: { now_ms: string }[] }> }) {
  const watch = new HeartbeatWatch(3_600_000);
  const now = await pool.query("SELECT (extract(epoch FROM now()) * 1000)::bigint AS now_ms");
  watch.read(Number(now.rows[0]!.now_ms) - 60_000);
  return watch;
}

const account = { kind: "user" as const, id: "orphaned" };
const silent = pino({ level: "silent" });
const keyId = "6a1f4f5e-8c4b-4d0e-9a57-1c2b3d4e5f60";

function authorization(requestId: string, gatewayInstance: string, expiresAt: Date, bodyBytes = 4_000) {
  const startedAt = new Date().toISOString();
  return {
    eventId: randomUUID(),
    data: {
      requestId,
      keyId,
      account,
      userId: account.id,
      organizationId: null,
      model: "alpha-5.4-mini",
      endpoint: "chat.completions" as const,
      streamed: true,
      startedAt,
      estimate: { inputTokensMax: bodyBytes, outputTokensMax: 1_024, estimatedWon: "4" },
      gatewayInstance,
      expiresAt: expiresAt.toISOString(),
    },
  };
}

describe("orphan hold settlement", () => {
  let harness: GatewayHarness;
  let store: PostgresEventStore;
  const enqueued: string[] = [];
  /** The rows the sweep named to its process's log writer. */
  const namedToLog: string[] = [];
  let watch: HeartbeatWatch;
  let paused: GatewaySession | undefined;
  /** A sweep, then the log writer's pass over the rows it settled (as the workers' writer does). */
  const sweep = async (sweepWatch = watch, reserveMs: number = defaultSettlementTimings.holdLifetimeMs) => {
    const result = await settleOrphanHolds(
      {
        database: harness.service.ledger.pool,
        completion: holdRowCompletionOf(harness.service.ledger.pool),
        reserves: new SweptHoldReserves(harness.service.ledger.pool),
        log: { settled: (requestId) => void namedToLog.push(requestId) },
        store,
        pricing: createPricingReadModel(harness.service.ledger.pool),
        enqueueCharges: async (requestIds) => void enqueued.push(...requestIds),
        clock: () => new Date(),
      },
      {
        presumedDeadAfterMs: 10_000,
        observationGapMaxMs: 3_600_000,
        holdAgeMinMs: 0,
        holdsPerSweepMax: 100,
        reserveMs,
      },
      sweepWatch,
    );
    enqueued.push(...(await logSettledHolds(harness.service.ledger.pool, store)));
    return result;
  };
  /** Whether the request's hold is still an open row (not settled, so not logged either). */
  const isOpenRow = async (requestId: string) =>
    (
      await harness.service.ledger.pool.query(
        "SELECT 1 FROM request_holds WHERE request_id = $1 AND settled_at IS NULL",
        [requestId],
      )
    ).rowCount === 1;
  const streamOf = async (requestId: string) =>
    (
      await harness.service.ledger.pool.query<{ type: string; data: Record<string, unknown> }>(
        "SELECT type, data FROM ledger_events WHERE stream_id = $1 ORDER BY stream_version",
        [`usage-${requestId}`],
      )
    ).rows;

  /** What the sweep keeps back of these requests' holds, in won. */
  const reservesOf = async (requestIds: string[]) =>
    Object.fromEntries(
      (
        await harness.service.ledger.pool.query<{ request_id: string; reserved_won: string }>(
          "SELECT request_id, reserved_won::text FROM swept_hold_reserves WHERE request_id = ANY($1)",
          [requestIds],
        )
      ).rows.map((row) => [row.request_id, new Money(row.reserved_won).toFixed()]),
    );

  beforeAll(async () => {
    harness = await startGatewayHarness({ label: "orphan_holds" });
    store = harness.service.ledger.store as PostgresEventStore;
    watch = await longWatch(harness.service.ledger.pool);
    await harness.topUp(account, "100");
    await harness.service.ledger.pool.query(
      "INSERT INTO gateway_instances (instance_id, seen_at) VALUES ('gateway-alive', now())",
    );
    // A gateway paused past the sweep's judgement: no recent heartbeat, its session still held.
    paused = new GatewaySession(harness.service.ledger.pool, "gateway-paused", 60_000, silent, unheard);
    await paused.start();
  }, 60_000);
  afterAll(async () => {
    await paused?.stop();
    await harness?.close();
  });

  it("given holds of a dead process, a live one and an expired one, when the sweep runs, then it settles the dead and the expired once", async () => {
    // Given
    const later = new Date(Date.now() + 600_000);
    const decisions = await usageAuthorizationsOf(harness.service.ledger.pool, store).authorizeUsage(
      [
        authorization("req_dead", "gateway-dead", later),
        authorization("req_alive", "gateway-alive", later),
        authorization("req_expired", "gateway-alive", new Date(Date.now() - 1_000)),
      ],
      { waitForFlush: true },
    );
    expect(decisions.map((decision) => decision.kind)).toEqual(["held", "held", "held"]);

    // When
    const first = await sweep();
    const second = await sweep();

    // Then
    expect(first.settledCount).toBe(2);
    expect(second.settledCount).toBe(0);
    expect(namedToLog.sort()).toEqual(["req_dead", "req_expired"]);
    expect(enqueued.sort()).toEqual(["req_dead", "req_expired"]);
    const dead = await streamOf("req_dead");
    expect(dead.map((event) => event.type)).toEqual(["UsageAuthorized", "UsageRecorded"]);
    expect(dead[1]!.data).toMatchObject({
      outcome: "interrupted",
      usageSource: "estimated",
      tokens: { input: 1_000, cached: null, output: 0, reasoning: null },
      heldWon: "4",
    });
    expect(await isOpenRow("req_alive")).toBe(true);
    const open = await harness.service.ledger.pool.query<{ request_id: string }>(
      "SELECT request_id FROM request_holds WHERE settled_at IS NULL UNION ALL SELECT request_id FROM open_holds",
    );
    expect(open.rows.map((row) => row.request_id)).toEqual(["req_alive"]);
    const funds = await harness.service.ledger.pool.query<{ held_won: string; pending_won: string }>(
      "SELECT held_won, pending_won FROM account_funds WHERE account_id = $1",
      [account.id],
    );
    // 1,000 input tokens of alpha-5.4-mini at $0.25/1M and ₩1,400/$: ₩0.35 pending per settled hold; their
    // gateways have no session (they died): nothing is kept back, and only the live hold stays held.
    expect(await reservesOf(["req_dead", "req_expired"])).toEqual({});
    expect(funds.rows[0]).toEqual({ held_won: "4", pending_won: "0.700000" });
  });

  it("given a paused gateway's holds an earlier release logged alone, one held whole and one cut to its account's room, when the sweep settles them, then each keeps back what the estimate did not use of the whole estimate, as for a row", async () => {
    // Both estimated at ₩4; the second held cut to ₩1 (its request may still cost ₩4)
    for (const [requestId, holdWon] of [
      ["req_logged_alone", "4"],
      ["req_logged_alone_cut", "1"],
    ] as const) {
      const hold = authorization(requestId, "gateway-paused", new Date(Date.now() + 600_000));
      await store.append({
        streamId: `usage-${requestId}`,
        expectedVersion: "no-stream",
        events: [
          {
            eventId: hold.eventId,
            event: {
              type: "UsageAuthorized",
              data: { ...hold.data, holdWon },
              metadata: { actor: "key:earlier", correlationId: requestId, occurredAt: hold.data.startedAt },
            },
          },
        ],
      });
    }

    await sweep();

    for (const requestId of ["req_logged_alone", "req_logged_alone_cut"])
      expect((await streamOf(requestId)).map((event) => event.type)).toEqual([
        "UsageAuthorized",
        "UsageRecorded",
      ]);
    // ₩4 less the ₩0.35 estimated, for each: not the cut hold's ₩1 less it.
    expect(await reservesOf(["req_logged_alone", "req_logged_alone_cut"])).toEqual({
      req_logged_alone: "3.65",
      req_logged_alone_cut: "3.65",
    });
  });

  it("given a paused gateway's hold cut to the room its account had, when the sweep settles it, then it keeps back what the estimate did not use of the whole estimate, and the account's next hold is refused while it stands", async () => {
    // Given: ₩2 on the account, and a ₩4 estimate held cut to ₩2 — the request may still cost ₩4 (C10)
    const holder = { kind: "user" as const, id: "reserve-of-a-cut-hold" };
    await harness.topUp(holder, "2");
    /** A ₩4 hold of the paused gateway on the holder's account: its decision. */
    const holdOnTheAccount = async (requestId: string) => {
      const hold = authorization(requestId, "gateway-paused", new Date(Date.now() + 600_000));
      const [decision] = await usageAuthorizationsOf(harness.service.ledger.pool, store).authorizeUsage(
        [{ ...hold, data: { ...hold.data, account: holder, userId: holder.id } }],
        { waitForFlush: true },
      );
      return decision!;
    };
    expect(await holdOnTheAccount("req_cut_swept")).toMatchObject({ kind: "held", holdWon: "2" });

    // When
    await sweep();

    // Then: the estimated ₩0.35 pending, and the ₩4 estimate's other ₩3.65 kept back (not the cut ₩2's ₩1.65)
    expect(await reservesOf(["req_cut_swept"])).toEqual({ req_cut_swept: "3.65" });
    const funds = await harness.service.ledger.pool.query<{ held_won: string; pending_won: string }>(
      `SELECT trim_scale(held_won)::text AS held_won, trim_scale(pending_won)::text AS pending_won
       FROM account_funds WHERE account_id = $1`,
      [holder.id],
    );
    expect(funds.rows[0]).toEqual({ held_won: "3.65", pending_won: "0.35" });
    // A top-up of ₩2 leaves no room while the reserve stands: the gateway's correction may take all ₩4.
    await harness.topUp(holder, "2");
    const refused = await holdOnTheAccount("req_after_cut_swept");
    expect(refused).toMatchObject({ kind: "refused", reason: "funds" });
    expect(new Money(refused.availableWon).isZero()).toBe(true);
  });

  it("given a paused gateway's swept hold, when its reserve's time passes, then the account no longer counts it, and the next sweep removes it", async () => {
    const holder = { kind: "user" as const, id: "reserve-expiring" };
    await harness.topUp(holder, "10");
    const hold = authorization("req_reserve_expires", "gateway-paused", new Date(Date.now() + 600_000));
    await usageAuthorizationsOf(harness.service.ledger.pool, store).authorizeUsage(
      [{ ...hold, data: { ...hold.data, account: holder, userId: holder.id } }],
      { waitForFlush: true },
    );
    const heldOf = async () =>
      (
        await harness.service.ledger.pool.query<{ held_won: string }>(
          "SELECT held_won::text FROM account_funds WHERE account_id = $1",
          [holder.id],
        )
      ).rows[0]!.held_won;

    // A reserve of 3 s: long enough that a loaded machine still reads it in force, short enough to wait out
    await sweep(watch, 3_000);
    expect(await reservesOf(["req_reserve_expires"])).toEqual({ req_reserve_expires: "3.65" });
    expect(Number(await heldOf())).toBe(3.65);

    await expect.poll(async () => Number(await heldOf()), { timeout: 15_000, interval: 100 }).toBe(0);
    await sweep();
    expect(await reservesOf(["req_reserve_expires"])).toEqual({});
  });

  it("given a paused gateway's swept hold, when its session ends (it died after all), then the next sweep frees what was kept back", async () => {
    const holder = { kind: "user" as const, id: "reserve-of-the-dead" };
    await harness.topUp(holder, "10");
    const dying = new GatewaySession(harness.service.ledger.pool, "gateway-dying", 60_000, silent, unheard);
    await dying.start();
    const hold = authorization("req_gateway_dies", "gateway-dying", new Date(Date.now() + 600_000));
    await usageAuthorizationsOf(harness.service.ledger.pool, store).authorizeUsage(
      [{ ...hold, data: { ...hold.data, account: holder, userId: holder.id } }],
      { waitForFlush: true },
    );
    await sweep();
    expect(await reservesOf(["req_gateway_dies"])).toEqual({ req_gateway_dies: "3.65" });

    await dying.stop();
    await sweep();

    expect(await reservesOf(["req_gateway_dies"])).toEqual({});
    const funds = await harness.service.ledger.pool.query<{ held_won: string }>(
      "SELECT held_won::text FROM account_funds WHERE account_id = $1",
      [holder.id],
    );
    expect(Number(funds.rows[0]!.held_won)).toBe(0);
  });

  it("given a hold the sweep settled, when its gateway's own settlement arrives late, then it is recorded as a correction", async () => {
    await usageAuthorizationsOf(harness.service.ledger.pool, store).authorizeUsage(
      [authorization("req_late", "gateway-dead", new Date(Date.now() + 600_000))],
      {
        waitForFlush: true,
      },
    );
    await sweep();
    const outbox = new UsageOutbox({
      completion: holdRowCompletionOf(harness.service.ledger.pool),
      log: { settled: (_requestId: string) => void logSettledHolds(harness.service.ledger.pool, store) },
      store,
      reserves: new SweptHoldReserves(harness.service.ledger.pool),
      charges: { enqueueCharge: (requestId) => void enqueued.push(`late:${requestId}`) },
      logger: pino({ level: "silent" }),
      entriesMax: 10,
      retryDelaysMs: [10],
    });

    outbox.void({ requestId: "req_late", account, releasedWon: "4", reason: "upstream-failed" }, "key:x");
    expect(await outbox.drain(5_000)).toBe(0);

    const stream = await streamOf("req_late");
    expect(stream.map((event) => event.type)).toEqual(["UsageAuthorized", "UsageRecorded", "UsageRecorded"]);
    expect(stream[2]!.data).toMatchObject({ heldWon: "0", pendingWon: "-0.350000", corrects: {} });
    expect(enqueued).toContain("late:req_late");
  });

  it("given a sweeper that has not watched the heartbeats for a whole window (it just started, or its database was away), then it settles nothing", async () => {
    await usageAuthorizationsOf(harness.service.ledger.pool, store).authorizeUsage(
      [authorization("req_unwatched", "gateway-dead", new Date(Date.now() - 1_000))],
      {
        waitForFlush: true,
      },
    );
    const fresh = new HeartbeatWatch(3_600_000);

    const result = await sweep(fresh);

    expect(result).toEqual({ settledCount: 0, watchedMs: 0, unpriceable: [] });
    expect(await isOpenRow("req_unwatched")).toBe(true);
    await sweep();
  });

  it("given a dead gateway's stream with a progress record, then it is settled for the output recorded; a renewed hold is not settled", async () => {
    const pool = harness.service.ledger.pool;
    await usageAuthorizationsOf(harness.service.ledger.pool, store).authorizeUsage(
      [
        authorization("req_progressed", "gateway-dead", new Date(Date.now() + 600_000)),
        authorization("req_renewed", "gateway-alive", new Date(Date.now() - 1_000)),
      ],
      { waitForFlush: true },
    );
    await pool.query(
      `INSERT INTO hold_progress (request_id, gateway_instance, output_tokens, renewed_until, recorded_at)
       VALUES ('req_progressed', 'gateway-dead', 137, now() + interval '10 minutes', now()),
              ('req_renewed', 'gateway-alive', 5, now() + interval '10 minutes', now())`,
    );
    await pool.query("UPDATE gateway_instances SET seen_at = now() WHERE instance_id = 'gateway-alive'");

    await sweep();

    const progressed = await streamOf("req_progressed");
    expect(progressed[1]!.data).toMatchObject({ outcome: "interrupted", tokens: { output: 137 } });
    expect(await isOpenRow("req_renewed")).toBe(true);
  });

  it("given a dead gateway's streams whose records carry the input their upstream reported, then each is billed that input and its cached part as reported; a record without it, four bytes of the body a token", async () => {
    // Given: bodies of 4,000 bytes; two records with the input reported (one with no cached count), and one
    // as a release before migration 28 writes it, naming no input
    const pool = harness.service.ledger.pool;
    await usageAuthorizationsOf(pool, store).authorizeUsage(
      ["req_reported_cached", "req_reported_uncached", "req_unreported"].map((requestId) =>
        authorization(requestId, "gateway-dead", new Date(Date.now() + 600_000)),
      ),
      { waitForFlush: true },
    );
    await pool.query(
      `INSERT INTO hold_progress (request_id, gateway_instance, output_tokens, input_tokens,
                                  cached_input_tokens, renewed_until, recorded_at)
       VALUES ('req_reported_cached', 'gateway-dead', 12, 2200, 800, now() + interval '10 minutes', now()),
              ('req_reported_uncached', 'gateway-dead', 12, 3000, NULL, now() + interval '10 minutes',
               now())`,
    );
    await pool.query(
      `INSERT INTO hold_progress (request_id, gateway_instance, output_tokens, renewed_until, recorded_at)
       VALUES ('req_unreported', 'gateway-dead', 12, now() + interval '10 minutes', now())`,
    );

    // When
    await sweep();

    // Then
    const tokensOf = async (requestId: string) => (await streamOf(requestId))[1]!.data.tokens;
    expect(await tokensOf("req_reported_cached")).toEqual({
      input: 2_200,
      cached: 800,
      output: 12,
      reasoning: null,
    });
    expect(await tokensOf("req_reported_uncached")).toEqual({
      input: 3_000,
      cached: null,
      output: 12,
      reasoning: null,
    });
    expect(await tokensOf("req_unreported")).toEqual({
      input: 1_000,
      cached: null,
      output: 12,
      reasoning: null,
    });
  });

  it("given a dead gateway's stream whose record names the fallback answering it, then it is priced and named as that fallback; a record naming none, as the model asked for", async () => {
    // Given: two holds of alpha-5.4-mini, one whose last record found alpha-5.4 answering in its place
    const pool = harness.service.ledger.pool;
    const holds = ["req_fallback_answering", "req_requested_answering"].map((requestId) =>
      authorization(requestId, "gateway-dead", new Date(Date.now() + 600_000)),
    );
    await usageAuthorizationsOf(pool, store).authorizeUsage(holds, { waitForFlush: true });
    await pool.query(
      `INSERT INTO hold_progress (request_id, gateway_instance, output_tokens, input_tokens,
                                  cached_input_tokens, answering_model, renewed_until, recorded_at)
       VALUES ('req_fallback_answering', 'gateway-dead', 12, 2200, 800, 'alpha-5.4',
               now() + interval '10 minutes', now()),
              ('req_requested_answering', 'gateway-dead', 12, 2200, 800, NULL,
               now() + interval '10 minutes', now())`,
    );

    // When
    await sweep();

    // Then: (1,400 × $1.25 + 800 × $0.125 + 12 × $10) / 1M × ₩1,400 as alpha-5.4; (1,400 × $0.25 + 800 ×
    // $0.025 + 12 × $2) / 1M × ₩1,400 as alpha-5.4-mini
    expect((await streamOf("req_fallback_answering"))[1]!.data).toMatchObject({
      model: "alpha-5.4",
      outcome: "interrupted",
      usageSource: "estimated",
      tokens: { input: 2_200, cached: 800, output: 12, reasoning: null },
      pendingWon: "2.758000",
    });
    expect((await streamOf("req_requested_answering"))[1]!.data).toMatchObject({
      model: "alpha-5.4-mini",
      pendingWon: "0.551600",
    });
  });

  it("given more orphans than one pricing query prices, when a sweep takes them all, then it prices them query by query and settles each", async () => {
    // Given: a dead gateway's holds on an account of their own, more than `pricingRequestsPerQueryMax`.
    const crowded = { kind: "user" as const, id: "orphaned-crowd" };
    await harness.topUp(crowded, "100");
    const count = billingLimits.pricingRequestsPerQueryMax + 1;
    const holds = Array.from({ length: count }, (_, index) => {
      const hold = authorization(`req_crowd_${index}`, "gateway-dead", new Date(Date.now() + 600_000));
      hold.data = {
        ...hold.data,
        account: crowded,
        userId: crowded.id,
        estimate: { ...hold.data.estimate, estimatedWon: "0.01" },
      };
      return hold;
    });
    const decisions = await usageAuthorizationsOf(harness.service.ledger.pool, store).authorizeUsage(holds, {
      waitForFlush: true,
    });
    expect(decisions.every((decision) => decision.kind === "held")).toBe(true);

    // When: the production bound on holds per sweep
    const settled = await settleOrphanHolds(
      {
        database: harness.service.ledger.pool,
        completion: holdRowCompletionOf(harness.service.ledger.pool),
        reserves: new SweptHoldReserves(harness.service.ledger.pool),
        log: { settled: (_requestId) => {} },
        store,
        pricing: createPricingReadModel(harness.service.ledger.pool),
        enqueueCharges: async () => {},
        clock: () => new Date(),
      },
      {
        presumedDeadAfterMs: 10_000,
        observationGapMaxMs: 3_600_000,
        holdAgeMinMs: 0,
        holdsPerSweepMax: billingLimits.orphanHoldsPerSweepMax,
        reserveMs: defaultSettlementTimings.holdLifetimeMs,
      },
      watch,
    );
    await logSettledHolds(harness.service.ledger.pool, store);

    // Then
    expect(settled.settledCount).toBe(count);
    expect((await streamOf(`req_crowd_${count - 1}`)).map((event) => event.type)).toEqual([
      "UsageAuthorized",
      "UsageRecorded",
    ]);
  }, 60_000);

  it("given a dead gateway's holds, one of a model no longer priced (gone from the catalog since), when the sweep runs, then it settles the others and that one once its model is priced", async () => {
    // Given: the unpriceable hold placed first, so that it heads the sweep's list; placed by a gateway of an
    // earlier release, whose catalog still listed its model (this one's would refuse it).
    const later = new Date(Date.now() + 600_000);
    const gone = authorization("req_model_gone", "gateway-dead", later);
    await usageAuthorizationsOf(harness.service.ledger.pool, store).authorizeUsage([gone], {
      waitForFlush: true,
    });
    await harness.service.ledger.pool.query(
      "UPDATE request_holds SET model = 'model-gone-since' WHERE request_id = 'req_model_gone'",
    );
    await usageAuthorizationsOf(harness.service.ledger.pool, store).authorizeUsage(
      [authorization("req_beside_gone", "gateway-dead", later)],
      { waitForFlush: true },
    );

    // When
    const result = await sweep();

    // Then: the other hold is settled; the unpriceable one is not settled at some other price
    expect(result).toMatchObject({ settledCount: 1, unpriceable: ["req_model_gone"] });
    expect((await streamOf("req_beside_gone")).map((event) => event.type)).toEqual([
      "UsageAuthorized",
      "UsageRecorded",
    ]);
    expect(await isOpenRow("req_model_gone")).toBe(true);

    // When an operator prices the model (from before the request started), a sweep settles it
    const hourBefore = new Date(new Date(gone.data.startedAt).getTime() - 3_600_000).toISOString();
    await store.append(
      modelPriceSet("model-gone-since", { input: "1", cachedInput: "1", output: "1" }, hourBefore),
    );
    await expect.poll(async () => (await sweep()).settledCount, { timeout: 10_000, interval: 100 }).toBe(1);
    expect((await streamOf("req_model_gone"))[1]).toMatchObject({
      type: "UsageRecorded",
      data: { outcome: "interrupted", usageSource: "estimated" },
    });
  });
});
