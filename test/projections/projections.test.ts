import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { allProjectionNames, allProjections } from "../../projections";
import { advisoryLockKeys } from "../../src/database/advisory-lock-keys";
import { readAdmission } from "../../src/gateway/generation/admission-read-model";
import type { LedgerEvent } from "../../src/ledger/events";
import { rebuildProjections } from "../../src/ledger/ledger-maintenance";
import type { ProjectionDefinition } from "../../src/ledger/projection/projection";
import { ProjectionRunner } from "../../src/ledger/projection/projection-runner";
import { ProjectionWaiter } from "../../src/ledger/projection/projection-waiter";
import type { StreamAppend } from "../../src/ledger/store/event-store";
import { verifyProjections } from "../../src/ledger/verify-projections";
import { metadata } from "../support/ledger-fixtures";
import { type LedgerHarness, openLedgerHarness } from "../support/ledger-harness";

const keyId = "3f0c2a9e-4b7d-4c1e-9a55-0d6f1e2b7c11";
const keyHash = "a".repeat(64);
const owner = { kind: "user" as const, id: "alice" };
let sequence = 0;

function onStream(streamId: string, ...events: LedgerEvent[]): StreamAppend {
  return {
    streamId,
    expectedVersion: "any",
    events: events.map((event) => ({ eventId: crypto.randomUUID(), event: { ...event } })),
  };
}

function usage(requestId: string, amountWon: string): LedgerEvent[] {
  const tokens = { input: 100, cached: 0, output: 50, reasoning: 0 };
  const common = {
    requestId,
    keyId,
    account: owner,
    model: "alpha-5.4-mini",
    endpoint: "chat.completions" as const,
    startedAt: "2026-11-20T03:00:00.000Z",
  };
  return [
    {
      type: "UsageRecorded",
      data: {
        ...common,
        userId: "alice",
        organizationId: null,
        streamed: false,
        outcome: "completed",
        tokens,
        usageSource: "upstream",
      },
      metadata: metadata({ actor: `key:${keyId}`, correlationId: requestId }),
    },
    {
      type: "UsageCharged",
      data: {
        ...common,
        amountWon,
        breakdown: {
          tokens,
          inputUsdPerMillionTokens: "1",
          cachedInputUsdPerMillionTokens: "0.1",
          outputUsdPerMillionTokens: "2",
          usd: "0.0002",
          fxRateKrwPerUsd: "1400",
          fxRateDate: "2026-11-19",
          discountRate: "0",
          amountWon,
          usageSource: "upstream",
        },
      },
      metadata: metadata({ actor: "system:reconciler", correlationId: requestId }),
    },
  ];
}

describe("projections", () => {
  let harness: LedgerHarness;
  beforeEach(async () => {
    harness = await openLedgerHarness(`projections${sequence++}`);
  });
  afterEach(async () => {
    await harness.dispose();
  });

  /** A runner of its own on the harness's ledger, driven by the test (prepare, catchUp). */
  const runnerOf = (projections: readonly ProjectionDefinition[]) =>
    new ProjectionRunner({
      pool: harness.ledger.pool,
      connectionString: harness.database.url,
      store: harness.store,
      projections,
      batchSizeMax: 100,
      standbyRetryMs: 100,
    });

  /** The admission read of one key, as the gateway does it. */
  const activeKeyByHash = async (keyHash: string) =>
    (await readAdmission(harness.ledger.pool, [keyHash])).records.get(keyHash);

  it("finds an issued key by hash while active, not after deactivation or deletion", async () => {
    const issued: LedgerEvent = {
      type: "ApiKeyIssued",
      data: {
        keyId,
        owner,
        issuedByUserId: "alice",
        name: "ci",
        description: "",
        keyHash,
        keyPreview: "svc_abcd…wxyz",
      },
      metadata: metadata({ actor: "user:alice" }),
    };
    await harness.append(onStream(`apikey-${keyId}`, issued));
    await harness.project();
    expect(await activeKeyByHash(keyHash)).toMatchObject({ keyId, owner });

    await harness.append(
      onStream(`apikey-${keyId}`, {
        type: "ApiKeyStatusChanged",
        data: { keyId, owner, status: 0 },
        metadata: metadata(),
      }),
    );
    await harness.project();
    expect(await activeKeyByHash(keyHash)).toBeUndefined();

    await harness.append(
      onStream(`apikey-${keyId}`, {
        type: "ApiKeyStatusChanged",
        data: { keyId, owner, status: 1 },
        metadata: metadata(),
      }),
    );
    await harness.project();
    expect(await activeKeyByHash(keyHash)).toBeDefined();

    await harness.append(
      onStream(`apikey-${keyId}`, { type: "ApiKeyDeleted", data: { keyId, owner }, metadata: metadata() }),
    );
    await harness.project();
    expect(await activeKeyByHash(keyHash)).toBeUndefined();
    const listed = await harness.ledger.pool.query("SELECT * FROM projection_key_lists");
    expect(listed.rows).toEqual([]);
  });

  it("keeps balances exact: top-ups minus charges, with pending usage until charged", async () => {
    await harness.append(
      onStream("account-user-alice", {
        type: "CreditToppedUp",
        data: { account: owner, amountWon: "10000", reference: "t1" },
        metadata: metadata(),
      }),
      onStream("account-user-alice", {
        type: "CreditToppedUp",
        data: { account: owner, amountWon: "0.10", reference: "t2" },
        metadata: metadata(),
      }),
    );
    const [recorded, charged] = usage("req-1", "0.300001");
    await harness.append(onStream("usage-req-1", recorded!));
    await harness.project();
    const pending = await harness.ledger.pool.query("SELECT request_id FROM projection_pending_charges");
    expect(pending.rows).toEqual([{ request_id: "req-1" }]);

    await harness.append(
      onStream("usage-req-1", charged!),
      onStream("usage-req-2", ...usage("req-2", "0.2")),
    );
    await harness.project();

    const balance = await harness.ledger.pool.query(
      "SELECT balance_won::text, topped_up_won::text, charged_won::text FROM projection_balances",
    );
    // 10000 + 0.10 − 0.300001 − 0.2 = 9999.599999, to the micro-won.
    expect(balance.rows).toEqual([
      { balance_won: "9999.599999", topped_up_won: "10000.1", charged_won: "0.500001" },
    ]);
    expect((await harness.ledger.pool.query("SELECT * FROM projection_pending_charges")).rows).toEqual([]);
    const billing = await harness.ledger.pool.query(
      "SELECT request_id, amount_won::text FROM projection_billing_history ORDER BY request_id",
    );
    expect(billing.rows).toEqual([
      { request_id: "req-1", amount_won: "0.300001" },
      { request_id: "req-2", amount_won: "0.2" },
    ]);
  });

  it("given a usage recorded, charged and recorded again by its correction in one batch, then the correcting usage is what is pending, live and rebuilt in SQL", async () => {
    const [recorded, charged] = usage("req-corrected", "7");
    const recordedEventId = crypto.randomUUID();
    // The gateway's delivered usage after the orphan sweep's estimate was charged (C10): more tokens, ₩2.5 more.
    const delivered = { input: 300, cached: 0, output: 90, reasoning: 0 };
    const correcting: LedgerEvent = {
      type: "UsageRecorded",
      data: {
        ...(recorded as Extract<LedgerEvent, { type: "UsageRecorded" }>).data,
        streamed: true,
        tokens: delivered,
        heldWon: "0",
        pendingWon: "2.5",
        corrects: { eventId: recordedEventId, pendingWon: "7" },
      },
      metadata: metadata({ actor: `key:${keyId}`, correlationId: "req-corrected" }),
    };
    // One append: the three events fall in one live batch and in one chunk of a rebuild.
    await harness.append({
      streamId: "usage-req-corrected",
      expectedVersion: "any",
      events: [
        { eventId: recordedEventId, event: recorded! },
        { eventId: crypto.randomUUID(), event: charged! },
        { eventId: crypto.randomUUID(), event: correcting },
      ],
    });
    await harness.project();
    const context = { pool: harness.ledger.pool, store: harness.store, projections: allProjections };
    const pending = async () =>
      (await harness.ledger.pool.query("SELECT request_id, usage FROM projection_pending_charges")).rows;
    const correctionPending = [
      { request_id: "req-corrected", usage: { tokens: delivered, usageSource: "upstream" } },
    ];

    expect(await pending()).toEqual(correctionPending);
    expect(await verifyProjections(context)).toEqual([]);
    await rebuildProjections(context, { fold: "sql", batchSizeMax: 1_000, chunkEventsMax: 1_000 });
    expect(await pending()).toEqual(correctionPending);
    expect(await verifyProjections(context)).toEqual([]);
  });

  it("applies a batch all or nothing: a crash mid-batch leaves rows and checkpoints untouched", async () => {
    await harness.append(
      onStream("account-user-alice", {
        type: "CreditToppedUp",
        data: { account: owner, amountWon: "5", reference: "t" },
        metadata: metadata(),
      }),
    );
    const crashing: ProjectionDefinition = {
      name: "crashing",
      version: 1,
      handles: new Set(["CreditToppedUp"]),
      tables: [],
      evolve: () => {
        throw new Error("crash after the balances were written in this transaction");
      },
    };
    const crashingRunner = runnerOf([...allProjections, crashing]);
    await harness.visible();
    const client = await harness.ledger.pool.connect();
    try {
      await crashingRunner.prepare(client);
      await expect(crashingRunner.catchUp(client)).rejects.toThrow(/crash after/);
    } finally {
      client.release();
    }
    expect((await harness.ledger.pool.query("SELECT * FROM projection_balances")).rows).toEqual([]);

    await harness.project();
    await harness.project();
    const balance = await harness.ledger.pool.query("SELECT balance_won::text FROM projection_balances");
    expect(balance.rows).toEqual([{ balance_won: "5" }]);
  });

  it("writes nothing when its checkpoints moved under it: a deposed runner fails instead of applying twice", async () => {
    const runner = runnerOf(allProjections);
    const client = await harness.ledger.pool.connect();
    try {
      await runner.prepare(client);
      await harness.append(onStream("usage-req-1", ...usage("req-1", "0.3")));
      await harness.visible();
      // Another runner applied something meanwhile: the stored checkpoint is no longer what this one wrote.
      await harness.ledger.pool.query(
        "UPDATE projection_checkpoints SET prepare_position = prepare_position + 1 WHERE projection = 'balances'",
      );
      await expect(runner.catchUp(client)).rejects.toThrow(/another runner is active/);
    } finally {
      client.release();
    }
    const written = await harness.ledger.pool.query(
      `SELECT (SELECT count(*) FROM projection_billing_history)::int AS billing,
              (SELECT count(*) FROM projection_balances)::int AS balances,
              (SELECT count(*) FROM projection_statement_months)::int AS months`,
    );
    expect(written.rows).toEqual([{ billing: 0, balances: 0, months: 0 }]);
  });

  it("plans each statement once per connection and reuses it batch after batch", async () => {
    const runner = runnerOf(allProjections);
    const client = await harness.ledger.pool.connect();
    try {
      await runner.prepare(client);
      const preparedOnConnection = async () =>
        (
          await client.query<{ name: string; statement: string }>(
            "SELECT name, statement FROM pg_prepared_statements ORDER BY name",
          )
        ).rows;
      await harness.append(onStream("usage-req-1", ...usage("req-1", "0.3")));
      await harness.visible();
      await runner.catchUp(client);
      const afterFirstBatch = await preparedOnConnection();

      await harness.append(onStream("usage-req-2", ...usage("req-2", "0.2")));
      await harness.visible();
      await runner.catchUp(client);
      expect(await preparedOnConnection()).toEqual(afterFirstBatch);

      const preparing = (sql: string) =>
        afterFirstBatch.filter((prepared) => prepared.statement.includes(sql));
      expect(preparing("INSERT INTO projection_billing_history")).toHaveLength(1);
      expect(preparing("INSERT INTO projection_balances")).toHaveLength(1);
      expect(preparing("UPDATE projection_checkpoints")).toHaveLength(1);
      const billing = await harness.ledger.pool.query("SELECT request_id FROM projection_billing_history");
      expect(billing.rows).toHaveLength(2);
    } finally {
      client.release();
    }
  });

  it("runs in one process at a time; a stand-by takes over, and waiters see their writes", async () => {
    const runners = [0, 1].map(
      () =>
        new ProjectionRunner({
          pool: harness.ledger.pool,
          connectionString: harness.database.url,
          store: harness.store,
          projections: allProjections,
          batchSizeMax: 100,
          standbyRetryMs: 50,
        }),
    );
    const stops = runners.map(() => new AbortController());
    const running = runners.map((runner, index) => runner.run(stops[index]!.signal));
    const waiter = new ProjectionWaiter(harness.ledger.pool, harness.database.url, 50);
    await waiter.start();
    try {
      for (let round = 0; round < 2; round++) {
        const appended = await harness.store.append(
          onStream("account-user-alice", {
            type: "CreditToppedUp",
            data: { account: owner, amountWon: "1.5", reference: `round ${round}` },
            metadata: metadata(),
          }),
        );
        await waiter.waitFor(appended.position, allProjectionNames, 10_000);
        const balance = await harness.ledger.pool.query("SELECT balance_won::text FROM projection_balances");
        expect(balance.rows).toEqual([{ balance_won: round === 0 ? "1.5" : "3" }]);
        // Stop whichever runner leads; the other must carry on.
        if (round === 0) {
          const leader = await harness.ledger.pool.query<{ holders: number }>(
            `SELECT count(*)::int AS holders FROM pg_locks WHERE locktype = 'advisory' AND objid = $1 AND granted
             AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
            [advisoryLockKeys.projectionRunner],
          );
          expect(leader.rows[0]).toEqual({ holders: 1 });
          const leading = runners.findIndex((runner) => runner.leading);
          expect(runners.filter((runner) => runner.leading)).toHaveLength(1);
          stops[leading]!.abort();
          await running[leading];
        }
      }
    } finally {
      for (const stop of stops) stop.abort();
      await Promise.all(running);
      await waiter.close();
    }
  });
});
