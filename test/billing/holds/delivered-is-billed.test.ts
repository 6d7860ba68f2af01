import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { allProjections } from "../../../projections";
import { Money } from "../../../src/kernel/money";
import { verifyProjections } from "../../../src/ledger/verify-projections";
import { capturedLog } from "../../support/captured-log";
import { createTestDatabase, type TestDatabase } from "../../support/database";
import { type GatewayHarness, startGatewayHarness } from "../../support/gateway-harness";
import { startTcpProxy, type TcpProxy } from "../../support/tcp-proxy";
import { personalHoldRequest, usageAuthorizationsOf } from "../../support/usage-authorizations";

/**
 * C10, "what was delivered is billed", against the real service: two gateways and a worker on one ledger,
 * slow streams, PostgreSQL away for 15 s, streams longer than a hold's lifetime or the stream deadline, a
 * stop that cuts streams, and back-to-back requests through different gateways. In every case each answered
 * request is billed exactly once for the tokens its client received, and the ledger verifies clean.
 */

const account = "delivered";
const streamPrompt = "Tell me a long story about rivers, mountains and the sea, with many details";

interface StreamResult {
  requestId: string;
  text: string;
  usage: { prompt_tokens: number; completion_tokens: number } | undefined;
  error: unknown;
}

async function streamThrough(
  harness: GatewayHarness,
  key: string,
  maxTokens?: number,
  onFirstChunk?: () => void,
): Promise<StreamResult> {
  const client = new OpenAI({ apiKey: key, baseURL: harness.baseUrl, maxRetries: 0, timeout: 120_000 });
  const result: StreamResult = { requestId: "", text: "", usage: undefined, error: undefined };
  try {
    const { data: stream, response } = await client.chat.completions
      .create({
        model: "alpha-5.4-mini",
        messages: [{ role: "user", content: streamPrompt }],
        stream: true,
        stream_options: { include_usage: true },
        ...(maxTokens === undefined ? {} : { max_tokens: maxTokens }),
      })
      .withResponse();
    result.requestId = response.headers.get("x-request-id") ?? "";
    for await (const chunk of stream) {
      onFirstChunk?.();
      result.text += chunk.choices[0]?.delta?.content ?? "";
      if (chunk.usage) result.usage = chunk.usage;
    }
  } catch (error) {
    result.error = error;
  }
  return result;
}

interface UsageRow {
  stream_id: string;
  type: string;
  actor: string;
  data: {
    outcome?: string;
    usageSource?: string;
    tokens?: { input: number; output: number };
    corrects?: unknown;
    amountWon?: string;
  };
}

async function usageEventsOf(harness: GatewayHarness, requestId: string): Promise<UsageRow[]> {
  const result = await harness.service.ledger.pool.query<UsageRow>(
    `SELECT stream_id, type, metadata->>'actor' AS actor, data FROM ledger_events
     WHERE stream_id = $1 ORDER BY stream_version`,
    [`usage-${requestId}`],
  );
  return result.rows;
}

/** The request's `UsageRecorded`, once written (within 10 s). */
async function recordedUsageOf(harness: GatewayHarness, requestId: string): Promise<UsageRow> {
  const deadlineMs = Date.now() + 10_000;
  for (;;) {
    const recorded = (await usageEventsOf(harness, requestId)).find(
      (event) => event.type === "UsageRecorded",
    );
    if (recorded) return recorded;
    if (Date.now() > deadlineMs) throw new Error(`no usage recorded for ${requestId}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function fundsOf(harness: GatewayHarness) {
  const result = await harness.service.ledger.pool.query<{
    balance_won: string;
    held_won: string;
    pending_won: string;
  }>(
    "SELECT balance_won, held_won, pending_won FROM account_funds WHERE account_kind = 'user' AND account_id = $1",
    [account],
  );
  return result.rows[0]!;
}

/** Waits until every hold of the account is settled and every usage charged. */
async function settledFunds(harness: GatewayHarness, timeoutMs = 60_000) {
  const deadlineMs = Date.now() + timeoutMs;
  for (;;) {
    const funds = await fundsOf(harness);
    if (new Money(funds.held_won).isZero() && new Money(funds.pending_won).isZero()) return funds;
    if (Date.now() > deadlineMs) throw new Error(`not settled: ${JSON.stringify(funds)}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** The won charged for the account's requests, from the log. */
async function chargedWon(harness: GatewayHarness): Promise<Money> {
  const result = await harness.service.ledger.pool.query<{ amount: string | null }>(
    "SELECT sum((data->>'amountWon')::numeric)::text AS amount FROM ledger_events WHERE type = 'UsageCharged' AND data->'account'->>'id' = $1",
    [account],
  );
  return new Money(result.rows[0]!.amount ?? "0");
}

/** What the client received was billed: one first record of what it received, charges that add up. */
async function expectBilledAsDelivered(
  harness: GatewayHarness,
  answered: readonly { requestId: string; usage: { prompt_tokens: number; completion_tokens: number } }[],
) {
  for (const { requestId, usage } of answered) {
    const events = await usageEventsOf(harness, requestId);
    const records = events.filter((event) => event.type === "UsageRecorded");
    // The record that counts is the last: the gateway's own, or its correction of a sweep's estimate.
    const final = records.at(-1)!;
    expect(final.data, requestId).toMatchObject({
      outcome: "completed",
      usageSource: "upstream",
      tokens: { input: usage.prompt_tokens, output: usage.completion_tokens },
    });
    expect(events.filter((event) => event.type === "UsageCharged")).toHaveLength(records.length);
  }
}

let database: TestDatabase | undefined;
const harnesses: GatewayHarness[] = [];
let proxy: TcpProxy | undefined;

afterEach(async () => {
  for (const harness of harnesses.splice(0).reverse()) await harness.close();
  await proxy?.close();
  proxy = undefined;
  await database?.drop();
  database = undefined;
});

/** The request's activity-log row, once its batch is written (up to 10 s). */
async function activityRowOf(
  harness: GatewayHarness,
  requestId: string,
): Promise<{ outcome: string; error_type: string | null; http_status: number } | undefined> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const row = (
      await harness.service.ledger.pool.query(
        "SELECT outcome, error_type, http_status FROM request_log WHERE request_id = $1",
        [requestId],
      )
    ).rows[0];
    if (row) return row;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return undefined;
}

async function provisionedKey(harness: GatewayHarness, credit = "10000"): Promise<string> {
  await harness.topUp({ kind: "user", id: account }, credit);
  return (await harness.issueKey(await harness.session(account))).key;
}

describe("what was delivered is billed", () => {
  it("given two gateways and slow streams, when PostgreSQL is away for 15 s, then every answered request is billed for what it delivered, none by the sweep", async () => {
    // Given: every connection of both gateways and the worker goes through a proxy the test can cut
    if (!process.env.REDIS_URL) throw new Error("REDIS_URL must be set");
    database = await createTestDatabase("delivered_outage");
    const server = new URL(database.url);
    proxy = await startTcpProxy({ host: server.hostname, port: Number(server.port || 5432) });
    const proxied = { ...database, url: proxy.urlFor(database.url) };
    const first = await startGatewayHarness({
      database: proxied,
      billing: { redisUrl: process.env.REDIS_URL },
      // About 25 s per answer of ~100 tokens: every stream spans the outage.
      simulator: { tokensPerSecond: 4 },
    });
    harnesses.push(first);
    const second = await startGatewayHarness({
      database: proxied,
      charges: first.charges,
      simulator: { tokensPerSecond: 4 },
    });
    harnesses.push(second);
    const key = await provisionedKey(first);
    // A stream's first chunk follows its durable hold: cut only once all six are under way (a fixed pause
    // could end before a hold committed on a loaded machine, and that request would rightly get a 503).
    const started: Promise<void>[] = [];
    const streams = [first, second, first, second, first, second].map((harness) => {
      let startedNow = () => {};
      started.push(new Promise<void>((resolve) => (startedNow = resolve)));
      // A stream that fails before its first chunk counts as started: the assertions below name it.
      return streamThrough(harness, key, undefined, () => startedNow()).finally(() => startedNow());
    });
    await Promise.all(started);

    // When: the database goes away for 15 s, then comes back
    await proxy.cut();
    await new Promise((resolve) => setTimeout(resolve, 15_000));
    await proxy.restore();
    const results = await Promise.all(streams);

    // Then: every stream answered in full and billed for exactly what its client received
    const answered = results.map((result) => {
      expect(result.error, result.requestId).toBeUndefined();
      expect(result.usage, result.requestId).toBeDefined();
      return { requestId: result.requestId, usage: result.usage! };
    });
    const funds = await settledFunds(first);
    await expectBilledAsDelivered(first, answered);
    const swept = await first.service.ledger.pool.query(
      "SELECT count(*)::int AS count FROM ledger_events WHERE metadata->>'actor' = 'system:orphan-hold-sweep'",
    );
    expect(swept.rows[0]).toEqual({ count: 0 });
    expect(new Money(10_000).minus(await chargedWon(first)).equals(funds.balance_won)).toBe(true);
    expect(
      await verifyProjections({
        pool: first.service.ledger.pool,
        store: first.service.ledger.store,
        projections: allProjections,
      }),
    ).toEqual([]);
  }, 150_000);

  it("given holds good for 2.5 s unless renewed and a sweep that judges within 3 s, when a stream runs for several lifetimes, then each progress record renews its hold, the sweep settles a hold nothing renews beside it but never the stream's, and the stream is billed in full", async () => {
    // Given: every role on timings short enough that the worker's sweep watches the heartbeats for its whole
    // window, and judges, while one stream runs (29 tokens at 4 a second: about three lifetimes). A record
    // every 500 ms renews a 2.5 s lifetime: a loaded machine may delay four in a row before a live stream's
    // hold lapses, and the stream runs about 4 s past the moment the hold beside it may be swept.
    if (!process.env.REDIS_URL) throw new Error("REDIS_URL must be set");
    const timings = {
      heartbeatIntervalMs: 500,
      progressIntervalMs: 500,
      holdLifetimeMs: 2_500,
      presumedDeadAfterMs: 3_000,
      observationGapMaxMs: 1_500,
      orphanSweepIntervalMs: 500,
    };
    const harness = await startGatewayHarness({
      label: "delivered_lifetime",
      billing: { redisUrl: process.env.REDIS_URL, settlementTimings: timings },
      simulator: { tokensPerSecond: 4 },
      service: { settlementTimings: timings },
    });
    harnesses.push(harness);
    const key = await provisionedKey(harness);
    const unrenewedHolder = { kind: "user" as const, id: "unrenewed" };
    await harness.topUp(unrenewedHolder, "10");

    // When: a stream, and once its hold is placed, a hold of the same gateway that no record renews
    let streamStarted = () => {};
    const started = new Promise<void>((resolve) => (streamStarted = resolve));
    let streamEnded = false;
    const streaming = streamThrough(harness, key, undefined, () => streamStarted()).finally(() => {
      streamStarted();
      streamEnded = true;
    });
    await started;
    const pool = harness.service.ledger.pool;
    const [streamHold] = (
      await pool.query<{ request_id: string; gateway_instance: string }>(
        "SELECT request_id, gateway_instance FROM request_holds WHERE account_id = $1 AND settled_at IS NULL",
        [account],
      )
    ).rows;
    const unrenewed = personalHoldRequest("req_unrenewed", unrenewedHolder.id, {
      gatewayInstance: streamHold!.gateway_instance,
      expiresAt: new Date(Date.now() + timings.holdLifetimeMs).toISOString(),
    });
    const [decision] = await usageAuthorizationsOf(pool, harness.service.ledger.store).authorizeUsage([
      unrenewed,
    ]);
    expect(decision).toMatchObject({ kind: "held" });

    // Then: by the time the sweep settles the hold nothing renews, the stream's hold, placed before it, has
    // outlived its own lifetime and stands open, renewed by every record so far
    const renewals = new Set<number>();
    const deadlineMs = Date.now() + 30_000;
    let sweptMeanwhile: { open: boolean; past_placement_lifetime: boolean; renewed_ahead: boolean };
    for (;;) {
      const [row] = (
        await pool.query<{
          unrenewed_swept: boolean;
          open: boolean;
          past_placement_lifetime: boolean;
          renewed_ahead: boolean;
          renewed_until_ms: number | null;
        }>(
          `SELECT EXISTS (SELECT 1 FROM request_holds
                          WHERE request_id = $2 AND settlement_event->>'type' = 'UsageRecorded')
                    OR EXISTS (SELECT 1 FROM ledger_events
                               WHERE stream_id = 'usage-' || $2 AND type = 'UsageRecorded') AS unrenewed_swept,
                  holds.settled_at IS NULL AS open, holds.expires_at < now() AS past_placement_lifetime,
                  coalesce(progress.renewed_until > now(), false) AS renewed_ahead,
                  extract(epoch FROM progress.renewed_until)::float8 * 1000 AS renewed_until_ms
           FROM request_holds holds LEFT JOIN hold_progress progress USING (request_id)
           WHERE holds.request_id = $1`,
          [streamHold!.request_id, unrenewed.data.requestId],
        )
      ).rows;
      if (row!.renewed_until_ms !== null) renewals.add(row!.renewed_until_ms);
      if (row!.unrenewed_swept) {
        const { open, past_placement_lifetime, renewed_ahead } = row!;
        sweptMeanwhile = { open, past_placement_lifetime, renewed_ahead };
        break;
      }
      if (streamEnded || Date.now() > deadlineMs) throw new Error("the sweep settled no unrenewed hold");
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(sweptMeanwhile).toEqual({ open: true, past_placement_lifetime: true, renewed_ahead: true });
    expect(streamEnded, "the stream still running when the sweep judged").toBe(false);
    // A record every 500 ms, each moving the hold's end forward: more than the first renewed it.
    expect(renewals.size).toBeGreaterThanOrEqual(3);
    expect([...renewals].sort((first, second) => first - second)).toEqual([...renewals]);

    // and the stream, never swept, ends in full and is billed by the gateway that served it
    const result = await streaming;
    expect(result.error).toBeUndefined();
    await settledFunds(harness);
    const events = await usageEventsOf(harness, result.requestId);
    expect(result.requestId).toBe(streamHold!.request_id);
    expect(events.map((event) => event.type)).toEqual(["UsageAuthorized", "UsageRecorded", "UsageCharged"]);
    expect(events[1]!.actor).toMatch(/^key:/);
    await expectBilledAsDelivered(harness, [{ requestId: result.requestId, usage: result.usage! }]);
    const [sweptUnrenewed] = (await usageEventsOf(harness, unrenewed.data.requestId)).filter(
      (event) => event.type === "UsageRecorded",
    );
    expect(sweptUnrenewed).toMatchObject({
      actor: "system:orphan-hold-sweep",
      data: { outcome: "interrupted" },
    });
  }, 90_000);

  it("given a stream deadline, when a stream runs past it, then the client gets an error event and the output delivered is billed as deadline-exceeded", async () => {
    const harness = await startGatewayHarness({
      label: "delivered_deadline",
      // Answers of 60 tokens or more last 10 s or more: far past the deadline.
      simulator: { tokensPerSecond: 6 },
      service: { settlementTimings: { streamDeadlineMs: 1_500 } },
    });
    harnesses.push(harness);
    const key = await provisionedKey(harness);

    const result = await streamThrough(harness, key);

    expect(result.text.length).toBeGreaterThan(0);
    expect(result.error).toBeInstanceOf(OpenAI.APIError);
    expect((result.error as InstanceType<typeof OpenAI.APIError>).message).toContain("stream deadline");
    // The error event may reach the client before the usage is written: a cut stream is not a complete
    // answer, so its last bytes do not wait for its usage.
    const recorded = await recordedUsageOf(harness, result.requestId);
    expect(recorded.data).toMatchObject({ outcome: "deadline-exceeded", usageSource: "estimated" });
    expect(recorded.data.tokens!.output).toBeGreaterThan(0);
    // The activity log says the gateway cut it, and why, though its status was 200 (rows are written in batches).
    const logged = await activityRowOf(harness, result.requestId);
    expect(logged).toEqual({ outcome: "cut", error_type: "model_processing_error", http_status: 200 });
  }, 60_000);

  it("given streams running at the drain bound, when the gateway stops, then each client gets an error event and its usage says the gateway cut it (shutdown)", async () => {
    const harness = await startGatewayHarness({
      label: "delivered_drain",
      simulator: { tokensPerSecond: 10 },
      service: { settlementTimings: { shutdownDrainMs: 1_000 } },
    });
    harnesses.push(harness);
    const key = await provisionedKey(harness);
    const streams = [streamThrough(harness, key), streamThrough(harness, key)];
    await new Promise((resolve) => setTimeout(resolve, 1_000));

    const { requestsCut } = await harness.service.drain();
    const results = await Promise.all(streams);

    expect(requestsCut).toBe(2);
    for (const result of results) {
      expect(result.text.length).toBeGreaterThan(0);
      // The format's own error event reached the client: the SDK raises it as an API error, not a socket error.
      expect(result.error).toBeInstanceOf(OpenAI.APIError);
      expect(String(result.error)).toContain("shutting down");
      const recorded = (await usageEventsOf(harness, result.requestId)).find(
        (event) => event.type === "UsageRecorded",
      );
      expect(recorded?.data).toMatchObject({ outcome: "shutdown" });
      expect(recorded!.data.tokens!.output).toBeGreaterThan(0);
    }
  }, 60_000);

  it("given a JSON request running at the drain bound, when the gateway stops, then it is answered 503, nothing is billed, and the activity log says the gateway cut it, without a failure logged", async () => {
    const { logger, lines } = capturedLog<{ level: number; msg: string; err?: unknown }>();
    const harness = await startGatewayHarness({
      label: "delivered_drain_json",
      simulator: { tokensPerSecond: 5 },
      service: { settlementTimings: { shutdownDrainMs: 1_000 }, logger },
    });
    harnesses.push(harness);
    const key = await provisionedKey(harness);
    const client = new OpenAI({ apiKey: key, baseURL: harness.baseUrl, maxRetries: 0 });
    const answered = client.chat.completions
      .create({ model: "alpha-5.4-mini", messages: [{ role: "user", content: streamPrompt }] })
      .withResponse()
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    await new Promise((resolve) => setTimeout(resolve, 1_000));

    expect((await harness.service.drain()).requestsCut).toBe(1);
    const error = await answered;

    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(503);
    expect(String(error)).toContain("shutting down");
    const requestId = (error as InstanceType<typeof OpenAI.APIError>).headers?.get("x-request-id") ?? "";
    const events = await usageEventsOf(harness, requestId);
    expect(events.map((event) => event.type)).not.toContain("UsageRecorded");
    const logged = await activityRowOf(harness, requestId);
    expect(logged).toEqual({ outcome: "cut", error_type: "model_processing_error", http_status: 503 });
    // An answer the gateway chose: a warning line, not a failure with its stack.
    expect(lines.filter((line) => line.msg === "request failed")).toEqual([]);
    expect(lines.filter((line) => line.msg === "request answered with an error")).toHaveLength(1);
  }, 60_000);

  it("given an account with room, when requests alternate between two gateways back to back, then none is refused", async () => {
    // Given: ₩5, and holds that take everything available (max_tokens far above what ₩5 buys)
    database = await createTestDatabase("delivered_back_to_back");
    const first = await startGatewayHarness({ database });
    harnesses.push(first);
    const second = await startGatewayHarness({ database, charges: first.charges });
    harnesses.push(second);
    const key = await provisionedKey(first, "5");

    // When: 15 requests, each sent the moment the previous answer arrived, alternating gateways
    const statuses: number[] = [];
    for (let index = 0; index < 15; index++) {
      const harness = index % 2 === 0 ? first : second;
      const answer = await fetch(`${harness.baseUrl}/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({
          model: "alpha-5.4-mini",
          messages: [{ role: "user", content: "Hi" }],
          max_tokens: 100_000,
        }),
      });
      statuses.push(answer.status);
      await answer.text();
    }

    // Then: each request costs far less than ₩1, so all 15 fit
    expect(statuses).toEqual(Array.from({ length: 15 }, () => 200));
  }, 60_000);
});
