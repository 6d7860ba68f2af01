import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import { estimateOutputTokens } from "../src/gateway/generation/token-estimator";
import { defaultSettlementTimings } from "../src/kernel/limits";
import { Money, sumMoney } from "../src/kernel/money";
import { simulateCompletion } from "../src/providers/simulator/simulated-completion";
import { createTestDatabase, type TestDatabase } from "./support/database";
import { type FaultyUpstream, startFaultyUpstream } from "./support/faulty-upstream";
import { messagesStreamStart } from "./support/raw-upstream-stream";
import {
  gatewayOriginOf,
  killOutright,
  provisionKeyWithCredit,
  type ServiceProcess,
  spawnRole,
} from "./support/service-process";
import { removeDeploymentQueueData } from "./workers/queue-test-support";

/**
 * What was delivered is billed (C10), with processes killed outright (SIGKILL: no drain, no flush), one
 * worker and gateway processes on a shared database, as deployed for scale-out. A stream cut by its
 * gateway's death is billed for the output its last progress record counted, not for none, for the input its
 * upstream reported at the stream's start where it did, and as the configured fallback answering it where one
 * was; an answer the client received in full is billed at the upstream's exact usage, however soon after it
 * the gateway dies (its last bytes leave only once its usage is durable).
 */

const adminToken = "delivered-admin-token-0123456789abcdef0123456789";
const toppedUpWon = "100000";
const model = "alpha-5.4-mini";

const started: ServiceProcess[] = [];
let database: TestDatabase | undefined;
let upstream: FaultyUpstream | undefined;
let failingUpstream: FaultyUpstream | undefined;
let modelsDirectory: string | undefined;

/** A gateway listens on a port the system picks (PORT=0): see gatewayOriginOf. */
function environmentOf(database: TestDatabase, simulatorTokensPerSecond: number): NodeJS.ProcessEnv {
  return {
    ...process.env,
    DATABASE_URL: database.url,
    SESSION_SECRET: "delivered-session-secret-0123456789abcdef0123456",
    KEY_PEPPER: "delivered-key-pepper-0123456789abcdef0123456789ab",
    ADMIN_TOKEN: adminToken,
    PORT: "0",
    HOST: "127.0.0.1",
    SIMULATOR_TOKENS_PER_SECOND: String(simulatorTokensPerSecond),
    LOG_LEVEL: "info",
  };
}

async function startRole(
  role: "gateway" | "worker",
  environment: NodeJS.ProcessEnv,
): Promise<ServiceProcess> {
  const running = await spawnRole(role, environment);
  started.push(running);
  return running;
}

const openaiOf = (url: string, apiKey: string) =>
  new OpenAI({ apiKey, baseURL: `${url}/llm/v1`, maxRetries: 0, timeout: 60_000 });

async function query<Row extends pg.QueryResultRow>(sql: string, values: unknown[] = []): Promise<Row[]> {
  const client = new pg.Client({ connectionString: database!.url });
  await client.connect();
  try {
    return (await client.query<Row>(sql, values)).rows;
  } finally {
    await client.end();
  }
}

/** The faulty upstream answers every request with raw bytes here: it never forwards to a simulator. */
const unreachableSimulatorUrl = "http://127.0.0.1:1";

/**
 * Reads a chat-completions stream until the client has received `text`, then on until its connection dies;
 * `arrived` resolves once the text is there, `reading` once the stream has ended.
 */
function readUntilText(
  data: AsyncIterable<OpenAI.Chat.Completions.ChatCompletionChunk>,
  text: string,
): { arrived: Promise<void>; reading: Promise<void> } {
  let received = "";
  let textArrived = () => {};
  const arrived = new Promise<void>((resolve) => {
    textArrived = resolve;
  });
  const reading = (async () => {
    try {
      for await (const chunk of data) {
        received += chunk.choices[0]?.delta?.content ?? "";
        if (received === text) textArrived();
      }
    } catch {
      // The connection dies with its gateway.
    }
  })();
  return { arrived, reading };
}

/** Polls until the request's progress record counts `outputTokens`. */
async function untilProgressCounts(requestId: string, outputTokens: number): Promise<void> {
  await expect
    .poll(
      async () =>
        (
          await query<{ output_tokens: number }>(
            "SELECT output_tokens FROM hold_progress WHERE request_id = $1",
            [requestId],
          )
        )[0]?.output_tokens,
      { timeout: 10_000 },
    )
    .toBe(outputTokens);
}

/**
 * Starts a worker and a gateway on `environment` and streams `streamedModel` for `account` until the client
 * has read "Hello there" (its upstream's first words) and a progress record has counted them, then kills
 * the gateway outright: the request's id.
 */
async function streamThenKillGateway(
  environment: NodeJS.ProcessEnv,
  account: string,
  streamedModel: string,
): Promise<string> {
  await startRole("worker", environment);
  const gateway = await startRole("gateway", environment);
  const url = gatewayOriginOf(gateway);
  const client = openaiOf(url, await provisionKeyWithCredit(url, adminToken, account, toppedUpWon));
  const { data, response } = await client.chat.completions
    .create({
      model: streamedModel,
      messages: [{ role: "user", content: "Hi" }],
      stream: true,
      max_tokens: 64,
    })
    .withResponse();
  const requestId = response.headers.get("x-request-id")!;
  const { arrived, reading } = readUntilText(data, "Hello there");
  await arrived;
  await untilProgressCounts(requestId, estimateOutputTokens("Hello there"));
  await killOutright(gateway);
  await reading;
  return requestId;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface UsageEventRow {
  request_id: string;
  type: "UsageAuthorized" | "UsageRecorded" | "UsageVoided" | "UsageCharged";
  data: {
    model?: string;
    outcome?: string;
    usageSource?: string;
    tokens?: { input: number; cached: number | null; output: number; reasoning: number | null };
    amountWon?: string;
    breakdown?: { inputUsdPerMillionTokens: string; outputUsdPerMillionTokens: string };
  };
}

/** Every usage event of these requests, in stream order. */
async function usageEventsOf(requestIds: readonly string[]): Promise<Map<string, UsageEventRow[]>> {
  const rows = await query<UsageEventRow>(
    `SELECT substr(stream_id, length('usage-') + 1) AS request_id, type, data FROM ledger_events
     WHERE stream_id = ANY($1::text[]) ORDER BY stream_id, stream_version`,
    [requestIds.map((requestId) => `usage-${requestId}`)],
  );
  const events = new Map<string, UsageEventRow[]>(requestIds.map((requestId) => [requestId, []]));
  for (const row of rows) events.get(row.request_id)!.push(row);
  return events;
}

/** Polls until every request has a `UsageCharged`, or the deadline passes; answers the last read. */
async function untilAllCharged(
  requestIds: readonly string[],
  waitMs: number,
): Promise<Map<string, UsageEventRow[]>> {
  const deadlineMs = Date.now() + waitMs;
  for (;;) {
    const events = await usageEventsOf(requestIds);
    const charged = [...events.values()].every((stream) => stream.some((row) => row.type === "UsageCharged"));
    if (charged || Date.now() > deadlineMs) return events;
    await sleep(250);
  }
}

/** The account's funds, and the top-up minus every charge in the ledger (the balance must equal it). */
async function fundsOf(
  userId: string,
): Promise<{ held: string; pending: string; balance: string; expected: string }> {
  const [funds] = await query<{ held_won: string; pending_won: string; balance_won: string }>(
    `SELECT held_won::text, pending_won::text, balance_won::text FROM account_funds
     WHERE account_kind = 'user' AND account_id = $1`,
    [userId],
  );
  const charges = await query<{ amount_won: string }>(
    "SELECT data->>'amountWon' AS amount_won FROM ledger_events WHERE type = 'UsageCharged'",
  );
  return {
    held: new Money(funds!.held_won).toFixed(),
    pending: new Money(funds!.pending_won).toFixed(),
    balance: new Money(funds!.balance_won).toFixed(),
    expected: new Money(toppedUpWon)
      .minus(sumMoney(charges.map((row) => new Money(row.amount_won))))
      .toFixed(),
  };
}

afterEach(async () => {
  for (const running of started.splice(0)) if (running.child.exitCode === null) running.child.kill("SIGKILL");
  await upstream?.close();
  upstream = undefined;
  await failingUpstream?.close();
  failingUpstream = undefined;
  if (modelsDirectory) await rm(modelsDirectory, { recursive: true, force: true });
  modelsDirectory = undefined;
  if (database)
    await removeDeploymentQueueData({ redisUrl: process.env.REDIS_URL, databaseUrl: database.url });
  await database?.drop();
  database = undefined;
});

describe("what was delivered is billed, with gateways killed outright", () => {
  it("SIGKILL mid-stream → the cut streams are billed for the output delivered up to the last progress record", async () => {
    // Given a worker and a gateway whose simulated upstream streams 5 tokens a second, and five prompts whose
    // answers run 45 tokens or more: at least 9 s each, so every stream is still running when it is cut.
    const tokensPerSecond = 5;
    const prompts: string[] = [];
    for (let part = 0; prompts.length < 5 && part < 1_000; part += 1) {
      const content = `Tell me a long story about rivers and the sea, part ${part}`;
      if (simulateCompletion([{ role: "user", text: content }], undefined).outputTokens >= 45)
        prompts.push(content);
    }
    expect(prompts).toHaveLength(5);
    database = await createTestDatabase("delivered_stream");
    const environment = environmentOf(database, tokensPerSecond);
    await startRole("worker", environment);
    const gateway = await startRole("gateway", environment);
    const url = gatewayOriginOf(gateway);
    const client = openaiOf(url, await provisionKeyWithCredit(url, adminToken, "streamer", toppedUpWon));

    // When five streams are read for 5 s — two progress records at least — and their gateway is killed
    const streams = await Promise.all(
      prompts.map(async (content) => {
        const startedAtMs = Date.now();
        const { data, response } = await client.chat.completions
          .create({ model, messages: [{ role: "user", content }], stream: true })
          .withResponse();
        expect(response.status).toBe(200);
        let contentArrived = () => {};
        const firstContent = new Promise<void>((resolve) => {
          contentArrived = resolve;
        });
        const received = { text: "", finished: false };
        const reading = (async () => {
          try {
            for await (const chunk of data) {
              const choice = chunk.choices[0];
              if (choice?.delta?.content) {
                received.text += choice.delta.content;
                contentArrived();
              }
              if (choice?.finish_reason) received.finished = true;
            }
          } catch {
            // The connection dies with its gateway: what was read so far is what was delivered.
          }
        })();
        return {
          requestId: response.headers.get("x-request-id")!,
          startedAtMs,
          received,
          firstContent,
          reading,
        };
      }),
    );
    await Promise.all(streams.map((stream) => stream.firstContent));
    await sleep(5_000);
    const progressRows = await query<{ request_id: string; output_tokens: number }>(
      "SELECT request_id, output_tokens FROM hold_progress WHERE request_id = ANY($1::text[])",
      [streams.map((stream) => stream.requestId)],
    );
    await killOutright(gateway);
    const killedAtMs = Date.now();
    await Promise.all(streams.map((stream) => stream.reading));
    const recordedBeforeKill = new Map(progressRows.map((row) => [row.request_id, row.output_tokens]));

    // Then each cut stream is settled as interrupted and estimated, and charged once, within 30 s
    const events = await untilAllCharged(
      streams.map((stream) => stream.requestId),
      30_000,
    );
    for (const stream of streams) {
      expect(stream.received.finished, "the stream was cut before its end").toBe(false);
      const progressBeforeKill = recordedBeforeKill.get(stream.requestId) ?? 0;
      expect(progressBeforeKill, "progress was recorded while the stream ran").toBeGreaterThan(0);
      const usageEvents = events.get(stream.requestId)!;
      expect(usageEvents.map((row) => row.type)).toEqual([
        "UsageAuthorized",
        "UsageRecorded",
        "UsageCharged",
      ]);
      const usage = usageEvents[1]!.data;
      expect(usage).toMatchObject({ outcome: "interrupted", usageSource: "estimated" });
      // At least what the last record read before the kill counted (one more may have landed after the read):
      // never 0, which is what a cut stream was billed before progress was recorded.
      expect(usage.tokens!.output).toBeGreaterThan(0);
      expect(usage.tokens!.output).toBeGreaterThanOrEqual(progressBeforeKill);
      // At most what the client received, counted with the gateway's own estimator. The gateway counts the
      // text delivered since its previous record at each record and adds the counts up; a BPE tokenizer may
      // count a word cut at a piece's edge as one token more than the whole text has, so each record the
      // stream lived through is allowed 2 tokens of slack.
      const recordsMax =
        Math.ceil((killedAtMs - stream.startedAtMs) / defaultSettlementTimings.progressIntervalMs) + 1;
      expect(usage.tokens!.output).toBeLessThanOrEqual(
        estimateOutputTokens(stream.received.text) + 2 * recordsMax,
      );
    }
    // And nothing stays held or pending; the balance is the top-up minus the charges, exactly
    const funds = await fundsOf("streamer");
    expect({ held: funds.held, pending: funds.pending }).toEqual({ held: "0", pending: "0" });
    expect(funds.balance).toBe(funds.expected);
  }, 240_000);

  it("SIGKILL mid-stream → a messages stream is billed the input and cached input its upstream reported at its start, and the output of the last progress record", async () => {
    // Given a worker, and a gateway whose messages upstream reports 2,200 input tokens at the stream's start,
    // 800 of them read from the cache, then sends "Hello there" and stalls
    upstream = await startFaultyUpstream(unreachableSimulatorUrl);
    upstream.setPlan(() => ({
      kind: "raw",
      writes: messagesStreamStart("Hello there", {
        input_tokens: 1_300,
        cache_read_input_tokens: 800,
        cache_creation_input_tokens: 100,
      }),
      keepOpen: true,
    }));
    database = await createTestDatabase("delivered_reported_input");
    const environment = {
      ...environmentOf(database, 0),
      DELTA_BASE_URL: upstream.url,
      DELTA_API_KEY: "secret-delta",
    };

    // When the client has read the text, a progress record has counted it, and the gateway is killed
    const requestId = await streamThenKillGateway(environment, "cached", "delta-4.5-haiku");

    // Then the sweep bills the reported input and cached input, and the 2 output tokens the record counted
    const events = (await untilAllCharged([requestId], 30_000)).get(requestId)!;
    expect(events.map((row) => row.type)).toEqual(["UsageAuthorized", "UsageRecorded", "UsageCharged"]);
    expect(events[1]!.data).toMatchObject({
      outcome: "interrupted",
      usageSource: "estimated",
      tokens: { input: 2_200, cached: 800, output: 2, reasoning: null },
    });
    // (1,400 × $1 + 800 × $0.10 + 2 × $5) / 1M × ₩1,400 = ₩2.086
    expect(events[2]!.data.amountWon).toBe("2.086000");
    const funds = await fundsOf("cached");
    expect(funds).toEqual({ held: "0", pending: "0", balance: "99997.914", expected: "99997.914" });
  }, 120_000);

  it("SIGKILL mid-stream → a stream a fallback was answering is billed at the fallback's price and names it, as the gateway's own settlement would", async () => {
    // Given a worker, and a gateway where zeta-mini falls back to delta-4.5-haiku (another family, dearer):
    // zeta's upstream answers 503, delta's reports 2,200 input tokens at the stream's start, 800 of them read
    // from the cache, then sends "Hello there" and stalls
    failingUpstream = await startFaultyUpstream(unreachableSimulatorUrl);
    failingUpstream.setPlan(() => ({ kind: "status", status: 503 }));
    upstream = await startFaultyUpstream(unreachableSimulatorUrl);
    upstream.setPlan(() => ({
      kind: "raw",
      writes: messagesStreamStart("Hello there", {
        input_tokens: 1_300,
        cache_read_input_tokens: 800,
        cache_creation_input_tokens: 100,
      }),
      keepOpen: true,
    }));
    modelsDirectory = await mkdtemp(join(tmpdir(), "delivered-fallback-"));
    const modelsFile = join(modelsDirectory, "models.yaml");
    await writeFile(
      modelsFile,
      "models:\n  zeta-mini:\n    family: zeta\n    protocol: chat-completions\n    fallbacks: [delta-4.5-haiku]\n",
    );
    database = await createTestDatabase("delivered_fallback");
    const environment = {
      ...environmentOf(database, 0),
      MODELS_FILE: modelsFile,
      ZETA_BASE_URL: failingUpstream.url,
      ZETA_API_KEY: "secret-zeta",
      DELTA_BASE_URL: upstream.url,
      DELTA_API_KEY: "secret-delta",
    };

    // When the client has read the fallback's text, a progress record has counted it, and the gateway dies
    const requestId = await streamThenKillGateway(environment, "fellback", "zeta-mini");
    expect(failingUpstream.served.map((served) => served.fault)).toContain("503");

    // Then the sweep's settlement names delta-4.5-haiku, as the gateway's own settlement of a request a
    // fallback answered does, and its charge is priced as it
    const events = (await untilAllCharged([requestId], 30_000)).get(requestId)!;
    expect(events.map((row) => row.type)).toEqual(["UsageAuthorized", "UsageRecorded", "UsageCharged"]);
    expect(events[0]!.data.model).toBe("zeta-mini");
    expect(events[1]!.data).toMatchObject({
      model: "delta-4.5-haiku",
      outcome: "interrupted",
      usageSource: "estimated",
      tokens: { input: 2_200, cached: 800, output: 2, reasoning: null },
    });
    expect(events[2]!.data).toMatchObject({
      model: "delta-4.5-haiku",
      breakdown: { inputUsdPerMillionTokens: "1", outputUsdPerMillionTokens: "5" },
    });
    // (1,400 × $1 + 800 × $0.10 + 2 × $5) / 1M × ₩1,400 = ₩2.086 (as zeta-mini: ₩0.33642)
    expect(events[2]!.data.amountWon).toBe("2.086000");
    const funds = await fundsOf("fellback");
    expect(funds).toEqual({ held: "0", pending: "0", balance: "99997.914", expected: "99997.914" });
  }, 120_000);

  const rounds = Number(process.env.DELIVERED_ROUNDS ?? 5);
  const requestsPerRound = 20;

  it(
    `20 requests answered 200, SIGKILL at once, restart → all 20 charged at their exact upstream usage (not estimates), ${rounds} rounds`,
    async () => {
      // Given a worker, and for each round a fresh gateway (the next one starts while the round runs)
      database = await createTestDatabase("delivered_json");
      await startRole("worker", environmentOf(database, 0));
      const startGateway = async () => {
        const gateway = await startRole("gateway", environmentOf(database!, 0));
        return { gateway, url: gatewayOriginOf(gateway) };
      };
      let current = await startGateway();
      const apiKey = await provisionKeyWithCredit(current.url, adminToken, "answered", toppedUpWon);

      // When each round's 20 concurrent requests are all answered 200, and the gateway is killed the moment
      // the last answer arrives
      const answered: { requestId: string; promptTokens: number; completionTokens: number }[] = [];
      for (let round = 0; round < rounds; round += 1) {
        const next = round + 1 < rounds ? startGateway() : undefined;
        // Awaited after the round; a failure to start must not go unhandled meanwhile.
        next?.catch(() => {});
        const client = openaiOf(current.url, apiKey);
        const answers = await Promise.all(
          Array.from({ length: requestsPerRound }, (_, index) =>
            client.chat.completions
              .create({
                model,
                messages: [{ role: "user", content: `Round ${round}, question ${index}: a river?` }],
              })
              .withResponse(),
          ),
        );
        await killOutright(current.gateway);
        for (const { data, response } of answers) {
          expect(response.status).toBe(200);
          answered.push({
            requestId: response.headers.get("x-request-id")!,
            promptTokens: data.usage!.prompt_tokens,
            completionTokens: data.usage!.completion_tokens,
          });
        }
        if (next) current = await next;
      }

      // Then every answered request is charged once, at the usage its answer reported
      const requestIds = answered.map((answer) => answer.requestId);
      expect(new Set(requestIds).size).toBe(rounds * requestsPerRound);
      const events = await untilAllCharged(requestIds, 60_000);
      const misses: string[] = [];
      for (const answer of answered) {
        const stream = events.get(answer.requestId)!;
        const recorded = stream.filter((row) => row.type === "UsageRecorded");
        const charged = stream.filter((row) => row.type === "UsageCharged");
        const exact =
          recorded.length === 1 &&
          charged.length === 1 &&
          recorded[0]!.data.outcome === "completed" &&
          recorded[0]!.data.usageSource === "upstream" &&
          recorded[0]!.data.tokens!.input === answer.promptTokens &&
          recorded[0]!.data.tokens!.output === answer.completionTokens;
        if (!exact)
          misses.push(
            `${answer.requestId}: answered ${answer.promptTokens}/${answer.completionTokens} tokens, ledger ${JSON.stringify(
              stream.map((row) => ({ type: row.type, ...row.data })),
            )}`,
          );
      }
      expect(misses).toEqual([]);
      const [interrupted] = await query<{ count: number }>(
        "SELECT count(*)::int AS count FROM ledger_events WHERE type = 'UsageRecorded' AND data->>'outcome' = 'interrupted'",
      );
      expect(interrupted!.count).toBe(0);
      const funds = await fundsOf("answered");
      expect({ held: funds.held, pending: funds.pending }).toEqual({ held: "0", pending: "0" });
      expect(funds.balance).toBe(funds.expected);
    },
    120_000 + rounds * 20_000,
  );
});
