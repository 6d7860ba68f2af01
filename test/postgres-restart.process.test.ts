import { execFile } from "node:child_process";
import { promisify } from "node:util";
import OpenAI, { APIError } from "openai";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { advisoryLockKeys } from "../src/database/advisory-lock-keys";
import { defaultSettlementTimings, limits } from "../src/kernel/limits";
import { Money, sumMoney } from "../src/kernel/money";
import { ledgerCommandArgs } from "./support/built-entries";
import {
  createPrivatePostgresCluster,
  type PrivatePostgresCluster,
} from "./support/private-postgres-cluster";
import { type PrivateRedis, startPrivateRedis } from "./support/private-redis";
import {
  gatewayOriginOf,
  provisionKeyWithCredit,
  type ServiceProcess,
  spawnRole,
} from "./support/service-process";

const run = promisify(execFile);

/**
 * PostgreSQL itself restarted and crashed under load (C3, C10, C11), where the outage tests only cut
 * connections through a proxy: here the server resets every connection, the backends' prepared statements
 * and advisory locks (the leaders', each gateway's session) go with them, LISTEN connections die, and a
 * commit in flight at a crash may or may not have landed. One worker and one gateway process, started as
 * operators start them, on a cluster and a Redis server of the test's own, keep running throughout: during
 * the outage requests are refused 503/300 and nothing else fails, and afterwards the same processes are
 * ready and serve again, and every request is billed as it ended — once.
 */

const adminToken = "restart-admin-token-0123456789abcdef0123456789";
const ledgerSigningKey = Buffer.alloc(32, 7).toString("base64");
const model = "gamma-4-3";
/** Output tokens each request may produce: a hold of about ₩1, so an account of ₩20 runs out under load. */
const outputTokensMax = 40;
const accounts = [
  { userId: "tight-a", toppedUpWon: "20" },
  { userId: "tight-b", toppedUpWon: "20" },
  { userId: "ample", toppedUpWon: "100000" },
] as const;
type LoadedUserId = (typeof accounts)[number]["userId"];
/** Of every eight requests, two go to each tight account and four to the ample one. */
const arrivalsPerRound: Record<LoadedUserId, number> = { "tight-a": 2, "tight-b": 2, ample: 4 };
/** About 8 requests a second: each lasts about 1.3 s, so about 10 are under way at any time. */
const arrivalIntervalMs = 125;
/**
 * No request may take longer: an answer waits at most `usageDurableWaitMs` (10 s) for its usage to be
 * durable, a stream's output waits for its gateway's session while the server is away (a second or two
 * here), and the answer itself takes about 1.3 s.
 */
const requestDurationMaxMs = defaultSettlementTimings.usageDurableWaitMs + 5_000;

interface Outcome {
  userId: string;
  endpoint: "chat" | "responses";
  streamed: boolean;
  startedAtMs: number;
  endedAtMs: number;
  requestId: string | undefined;
  /** The HTTP status, or "cut" for a stream that began 200 and ended without its last chunk. */
  status: number | "cut" | "no answer";
  /** The application status of an error body. */
  errorStatus?: number;
  /** The usage the answer reported (a JSON answer, a complete stream's last chunk). */
  usage?: { input: number; output: number };
  error?: string;
}

let cluster: PrivatePostgresCluster | undefined;
let redis: PrivateRedis | undefined;
const started: ServiceProcess[] = [];
let gatewayUrl = "";
const keys = new Map<string, string>();
/** What each account was topped up with. */
const toppedUp = new Map<string, string>();
const outcomes: Outcome[] = [];

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function query<Row extends pg.QueryResultRow>(sql: string, values: unknown[] = []): Promise<Row[]> {
  const client = new pg.Client({ connectionString: cluster!.url });
  await client.connect();
  try {
    return (await client.query<Row>(sql, values)).rows;
  } finally {
    await client.end();
  }
}

beforeAll(async () => {
  cluster = await createPrivatePostgresCluster("restart");
  redis = await startPrivateRedis();
  const environment: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: cluster.url,
    REDIS_URL: redis.url,
    SESSION_SECRET: "restart-session-secret-0123456789abcdef01234567",
    KEY_PEPPER: "restart-key-pepper-0123456789abcdef0123456789a",
    ADMIN_TOKEN: adminToken,
    // Checkpoints are sealed too (a leader of their own), and verified at the end.
    LEDGER_SIGNING_KEY: ledgerSigningKey,
    PORT: "0",
    HOST: "127.0.0.1",
    // 40 tokens in about 1.3 s: streams are under way whenever the server goes.
    SIMULATOR_TOKENS_PER_SECOND: "30",
    LOG_LEVEL: "info",
  };
  // Each process is noted as soon as it runs, so that afterAll ends it even if the other fails to start.
  const startRole = async (role: "gateway" | "worker") => {
    const running = await spawnRole(role, environment);
    started.push(running);
    return running;
  };
  const [, gateway] = await Promise.all([startRole("worker"), startRole("gateway")]);
  gatewayUrl = gatewayOriginOf(gateway);
  for (const { userId, toppedUpWon } of accounts) await provision(userId, toppedUpWon);
}, 120_000);

afterAll(async () => {
  for (const running of started.splice(0)) if (running.child.exitCode === null) running.child.kill("SIGKILL");
  await redis?.stop();
  await cluster?.drop();
});

/** A session, credit and a personal key for the account, through the admin and key APIs. */
async function provision(userId: string, toppedUpWon: string): Promise<void> {
  keys.set(userId, await provisionKeyWithCredit(gatewayUrl, adminToken, userId, toppedUpWon));
  toppedUp.set(userId, toppedUpWon);
}

/** The four ways a client asks: each endpoint, JSON or streamed. */
type RequestKind = { endpoint: "chat" | "responses"; streamed: boolean };
const requestKinds: readonly RequestKind[] = [
  { endpoint: "chat", streamed: false },
  { endpoint: "chat", streamed: true },
  { endpoint: "responses", streamed: false },
  { endpoint: "responses", streamed: true },
];

/** One request through the official client, and how it ended. */
async function send(userId: string, kind: RequestKind, ordinal: number): Promise<Outcome> {
  const client = new OpenAI({
    apiKey: keys.get(userId)!,
    baseURL: `${gatewayUrl}/llm/v1`,
    maxRetries: 0,
    timeout: requestDurationMaxMs + 10_000,
  });
  const content = `Question ${ordinal} of ${userId}: where do rivers go?`;
  const outcome: Outcome = {
    userId,
    ...kind,
    startedAtMs: Date.now(),
    endedAtMs: 0,
    requestId: undefined,
    status: "no answer",
  };
  let answered = false;
  const answer = (response: Response) => {
    answered = true;
    outcome.requestId = response.headers.get("x-request-id") ?? undefined;
    outcome.status = kind.streamed ? "cut" : response.status;
  };
  try {
    if (kind.endpoint === "chat" && kind.streamed) {
      const { data, response } = await client.chat.completions
        .create({
          model,
          max_tokens: outputTokensMax,
          messages: [{ role: "user", content }],
          stream: true,
          stream_options: { include_usage: true },
        })
        .withResponse();
      answer(response);
      for await (const chunk of data)
        if (chunk.usage)
          outcome.usage = { input: chunk.usage.prompt_tokens, output: chunk.usage.completion_tokens };
      if (outcome.usage) outcome.status = response.status;
    } else if (kind.endpoint === "chat") {
      const { data, response } = await client.chat.completions
        .create({ model, max_tokens: outputTokensMax, messages: [{ role: "user", content }] })
        .withResponse();
      answer(response);
      outcome.usage = { input: data.usage!.prompt_tokens, output: data.usage!.completion_tokens };
    } else if (kind.streamed) {
      const { data, response } = await client.responses
        .create({ model, max_output_tokens: outputTokensMax, input: content, stream: true })
        .withResponse();
      answer(response);
      // An answer cut at max_output_tokens ends `response.incomplete`, still whole and with its usage.
      for await (const event of data)
        if (
          (event.type === "response.completed" || event.type === "response.incomplete") &&
          event.response.usage
        ) {
          const { usage } = event.response;
          outcome.usage = { input: usage.input_tokens, output: usage.output_tokens };
        }
      if (outcome.usage) outcome.status = response.status;
    } else {
      const { data, response } = await client.responses
        .create({ model, max_output_tokens: outputTokensMax, input: content })
        .withResponse();
      answer(response);
      outcome.usage = { input: data.usage!.input_tokens, output: data.usage!.output_tokens };
    }
  } catch (error) {
    outcome.error = String(error);
    if (error instanceof APIError && error.status !== undefined && !answered) {
      outcome.status = error.status;
      outcome.requestId = error.requestID ?? undefined;
      // The client keeps the body's `error` object, whose code is the application status (C3).
      outcome.errorStatus = (error.error as { code?: number } | undefined)?.code;
    }
  }
  outcome.endedAtMs = Date.now();
  return outcome;
}

/**
 * Requests arriving at a steady rate whatever became of the earlier ones (an open loop: while the ledger is
 * away, answers wait for their usage to be durable, and a client waiting for its answer would send nothing
 * new), round the accounts and the four ways of asking, until `stop` is called.
 */
function startLoad(): { stop: () => Promise<Outcome[]> } {
  const sent: Promise<Outcome>[] = [];
  const schedule = accounts.flatMap(({ userId }) =>
    Array.from({ length: arrivalsPerRound[userId] }, () => userId),
  );
  let ordinal = outcomes.length;
  const arrivals = setInterval(() => {
    const userId = schedule[ordinal % schedule.length]!;
    // The next way of asking each request, shifted each round: an outage of a moment meets every way, and
    // every account is asked every way.
    const kind = requestKinds[(ordinal + Math.floor(ordinal / schedule.length)) % requestKinds.length]!;
    sent.push(send(userId, kind, ordinal));
    ordinal += 1;
  }, arrivalIntervalMs);
  return {
    stop: async () => {
      clearInterval(arrivals);
      return Promise.all(sent);
    },
  };
}

interface ReadinessAnswer {
  status: number | "no answer";
  askedAtMs: number;
  tookMs: number;
}

async function askReadiness(): Promise<ReadinessAnswer> {
  const askedAtMs = Date.now();
  const response = await fetch(`${gatewayUrl}/health/ready`, { signal: AbortSignal.timeout(10_000) }).catch(
    () => undefined,
  );
  await response?.body?.cancel();
  return { status: response?.status ?? "no answer", askedAtMs, tookMs: Date.now() - askedAtMs };
}

/** Asks for readiness every 200 ms, one question at a time, until `stop` is called. */
function pollReadiness(): { answers: ReadinessAnswer[]; stop: () => Promise<void> } {
  const answers: ReadinessAnswer[] = [];
  let polling = true;
  const loop = (async () => {
    while (polling) {
      answers.push(await askReadiness());
      await sleep(200);
    }
  })();
  return {
    answers,
    stop: async () => {
      polling = false;
      await loop;
    },
  };
}

/**
 * Runs the load through `fault`, then until the gateway is ready again and has answered 200 on the ample
 * account to requests sent after it was: the same processes, never restarted. Readiness answers 503 while
 * the server is away, within its probes' bound (2 s), never hanging.
 */
async function underLoad(fault: () => Promise<void>): Promise<{ sent: Outcome[]; locksBefore: string[] }> {
  expect((await askReadiness()).status).toBe(200);
  const locksBefore = await sessionLocksHeld();
  const readiness = pollReadiness();
  const load = startLoad();
  let sent: Outcome[] | undefined;
  let readyAtMs: number | undefined;
  try {
    await sleep(2_000);
    await fault();
    const faultEndedAtMs = Date.now();
    const lastReadiness = () => readiness.answers.at(-1) ?? { status: "no answer", askedAtMs: 0 };
    await expect
      .poll(() => lastReadiness().askedAtMs > faultEndedAtMs && lastReadiness().status, {
        timeout: 30_000,
        interval: 100,
      })
      .toBe(200);
    readyAtMs = readiness.answers.at(-1)!.askedAtMs;
    await sleep(3_000);
  } finally {
    sent = await load.stop();
    await readiness.stop();
  }
  outcomes.push(...sent);
  // 503 while the server was away (a restart may be over between two questions), and never a hang.
  const readinessStatuses = new Set(readiness.answers.map((answer) => answer.status));
  expect([...readinessStatuses].filter((status) => status !== 200 && status !== 503)).toEqual([]);
  expect(Math.max(...readiness.answers.map((answer) => answer.tookMs))).toBeLessThan(
    limits.readinessProbeTimeoutMs + 1_000,
  );
  // A change made now is seen at once: its answer waits for the projections, which learn of it by LISTEN.
  const newcomer = `newcomer-${toppedUp.size}`;
  await provision(newcomer, "1000");
  const newcomerOutcome = await send(newcomer, { endpoint: "chat", streamed: false }, outcomes.length);
  outcomes.push(newcomerOutcome);
  expect(newcomerOutcome.status, newcomerOutcome.error).toBe(200);
  const servedAfter = sent.filter(
    (outcome) => outcome.userId === "ample" && outcome.startedAtMs > readyAtMs! && outcome.status === 200,
  );
  expect(servedAfter.length, "answers served after the recovery").toBeGreaterThanOrEqual(5);
  return { sent, locksBefore };
}

function summaryOf(sent: readonly Outcome[]): string {
  const counts = new Map<string, number>();
  for (const outcome of sent) {
    const key = `${outcome.endpoint} ${outcome.streamed ? "stream" : "json"} ${outcome.status}${outcome.errorStatus ? `/${outcome.errorStatus}` : ""}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  const slowestMs = Math.max(...sent.map((outcome) => outcome.endedAtMs - outcome.startedAtMs));
  return JSON.stringify({ ...Object.fromEntries([...counts].sort()), slowestMs });
}

/** Every outcome is one the contract allows: a 200, a 503/300 while the ledger was away, or out of funds. */
function expectOnlyAllowedAnswers(sent: readonly Outcome[]): void {
  const unexpected = sent.filter(
    (outcome) =>
      !(
        outcome.status === 200 ||
        outcome.status === "cut" ||
        (outcome.status === 503 && outcome.errorStatus === 300) ||
        (outcome.status === 400 && outcome.errorStatus === 401)
      ),
  );
  expect(unexpected.map((outcome) => `${outcome.status}/${outcome.errorStatus}: ${outcome.error}`)).toEqual(
    [],
  );
  const slow = sent.filter((outcome) => outcome.endedAtMs - outcome.startedAtMs > requestDurationMaxMs);
  expect(
    slow.map((outcome) => `${outcome.requestId} took ${outcome.endedAtMs - outcome.startedAtMs} ms`),
  ).toEqual([]);
  expect(
    sent.some((outcome) => outcome.status === 503),
    `some requests met the outage: ${summaryOf(sent)}`,
  ).toBe(true);
  expect(sent.every((outcome) => outcome.requestId !== undefined)).toBe(true);
  for (const kind of requestKinds)
    expect(
      sent.some(
        (outcome) =>
          outcome.endpoint === kind.endpoint && outcome.streamed === kind.streamed && outcome.status === 200,
      ),
      `a ${kind.endpoint} ${kind.streamed ? "stream" : "JSON"} answer in full: ${summaryOf(sent)}`,
    ).toBe(true);
}

interface UsageEventRow {
  request_id: string;
  type: string;
  data: {
    outcome?: string;
    tokens?: { input: number; output: number };
    amountWon?: string;
    account?: { kind: string; id: string };
  };
}

/** Every usage event, by request, in stream order. */
async function usageEventsByRequest(): Promise<Map<string, UsageEventRow[]>> {
  const rows = await query<UsageEventRow>(
    `SELECT substr(stream_id, length('usage-') + 1) AS request_id, type, data FROM ledger_events
     WHERE stream_id LIKE 'usage-%' ORDER BY stream_id, stream_version`,
  );
  const byRequest = new Map<string, UsageEventRow[]>();
  for (const row of rows) byRequest.set(row.request_id, [...(byRequest.get(row.request_id) ?? []), row]);
  return byRequest;
}

/** Waits until nothing is held or pending and every recorded usage is charged. */
async function untilSettled(waitMs: number): Promise<Map<string, UsageEventRow[]>> {
  const deadlineMs = Date.now() + waitMs;
  for (;;) {
    const [open] = await query<{ held: number; pending: number }>(
      `SELECT (SELECT count(*)::int FROM request_holds) AS held,
              (SELECT count(*)::int FROM account_funds WHERE held_won <> 0 OR pending_won <> 0) AS pending`,
    );
    const events = await usageEventsByRequest();
    const uncharged = [...events.values()].filter(
      (stream) =>
        stream.filter((row) => row.type === "UsageRecorded").length !==
        stream.filter((row) => row.type === "UsageCharged").length,
    );
    if ((open!.held === 0 && open!.pending === 0 && uncharged.length === 0) || Date.now() > deadlineMs)
      return events;
    await sleep(250);
  }
}

/** The money after the fault: each request billed as it ended, once; balances the top-ups minus the charges. */
async function expectBilledOnce(): Promise<void> {
  const events = await untilSettled(30_000);
  const byRequestId = new Map(outcomes.map((outcome) => [outcome.requestId!, outcome]));
  const misses: string[] = [];
  for (const [requestId, stream] of events) {
    const types = stream.map((row) => row.type);
    const recorded = stream.filter((row) => row.type === "UsageRecorded");
    const charged = stream.filter((row) => row.type === "UsageCharged");
    const outcome = byRequestId.get(requestId);
    const describe = () =>
      `${requestId} (${outcome?.endpoint} ${outcome?.status}, streamed ${outcome?.streamed}): ${types.join(", ")}`;
    if (!outcome) misses.push(`no request the test sent: ${describe()}`);
    else if (recorded.length !== charged.length) misses.push(`recorded and charged differ: ${describe()}`);
    else if (outcome.status === 200) {
      // The hold's commit may be lost in a crash (it commits without waiting for its flush); the usage never.
      const exact =
        (types.join() === "UsageAuthorized,UsageRecorded,UsageCharged" ||
          types.join() === "UsageRecorded,UsageCharged") &&
        recorded[0]!.data.outcome === "completed" &&
        recorded[0]!.data.tokens!.input === outcome.usage!.input &&
        recorded[0]!.data.tokens!.output === outcome.usage!.output;
      if (!exact) misses.push(`answered ${JSON.stringify(outcome.usage)}, billed otherwise: ${describe()}`);
    } else if (outcome.status === "cut") {
      if (recorded.length > 1 || (recorded.length === 1 && recorded[0]!.data.outcome === "completed"))
        misses.push(`a cut stream billed as more than what it delivered: ${describe()}`);
    } else if (charged.some((row) => !new Money(row.data.amountWon!).isZero()))
      misses.push(`refused, yet charged: ${describe()}`);
  }
  for (const outcome of outcomes)
    if (outcome.status === 200 && !events.has(outcome.requestId!))
      misses.push(`answered 200, never billed: ${outcome.requestId}`);
  expect(misses).toEqual([]);

  const funds = await query<{
    account_id: string;
    balance_won: string;
    held_won: string;
    pending_won: string;
  }>(
    `SELECT account_id, balance_won::text, held_won::text, pending_won::text FROM account_funds
     WHERE account_kind = 'user'`,
  );
  for (const [userId, toppedUpWon] of toppedUp) {
    const charges = [...events.values()]
      .flat()
      .filter((row) => row.type === "UsageCharged" && row.data.account!.id === userId)
      .map((row) => new Money(row.data.amountWon!));
    const row = funds.find((candidate) => candidate.account_id === userId)!;
    expect({
      userId,
      held: new Money(row.held_won).toFixed(),
      pending: new Money(row.pending_won).toFixed(),
    }).toEqual({ userId, held: "0", pending: "0" });
    expect(new Money(row.balance_won).toFixed(), userId).toBe(
      new Money(toppedUpWon).minus(sumMoney(charges)).toFixed(),
    );
    // C10: never lower than minus one request's cost.
    const dearest = charges.reduce((most, charge) => Money.max(most, charge), new Money(0));
    expect(new Money(row.balance_won).gte(dearest.negated()), `${userId}: ${row.balance_won}`).toBe(true);
  }
}

/** The locks a session holds for as long as it lives: the leaders' and each process's gateway session. */
const sessionLockKeys = [
  advisoryLockKeys.projectionRunner,
  advisoryLockKeys.billingLeader,
  advisoryLockKeys.ledgerCheckpointer,
  advisoryLockKeys.gatewaySession,
];

/** Each session lock held, and by how many sessions (a gateway session's second key is its process's). */
async function sessionLocksHeld(): Promise<string[]> {
  const rows = await query<{ key: number; holders: number }>(
    `SELECT key, count(*)::int AS holders
     FROM (SELECT CASE WHEN objsubid = 2 THEN classid ELSE objid END::int AS key FROM pg_locks
           WHERE locktype = 'advisory' AND granted
             AND database = (SELECT oid FROM pg_database WHERE datname = current_database())) held
     WHERE key = ANY($1::int[]) GROUP BY key ORDER BY key`,
    [sessionLockKeys],
  );
  return rows.map((row) => `${row.key}:${row.holders}`);
}

/** The locks held before the fault are held again, by as many sessions: no leader or session left behind. */
async function expectLocksRetaken(before: readonly string[]): Promise<void> {
  expect(before.map((held) => Number(held.split(":")[0]))).toEqual([...sessionLockKeys].sort());
  await expect.poll(sessionLocksHeld, { timeout: 15_000, interval: 250 }).toEqual(before);
}

/** `ledger verify`: the log's chains hold, and a fresh fold equals the live projections. */
async function expectLedgerVerifies(): Promise<void> {
  const { stdout } = await run(process.execPath, [...ledgerCommandArgs, "verify"], {
    env: { ...process.env, DATABASE_URL: cluster!.url, LEDGER_SIGNING_KEY: ledgerSigningKey },
  }).catch((error: { stdout?: string; stderr?: string }) => {
    throw new Error(`ledger verify failed: ${error.stdout}\n${error.stderr}`);
  });
  // Checkpoints were sealed across the faults, and their signatures checked.
  expect(stdout).toMatch(/, [1-9]\d* checkpoints,/);
  expect(stdout).not.toContain("not checked");
  expect(stdout).toContain("verify: projections match the log");
}

describe("PostgreSQL restarted and crashed under load", () => {
  it("restart -m fast: 503/300 while it is away, the same processes ready and serving after, billed once", async () => {
    const { sent, locksBefore } = await underLoad(() => cluster!.restartFast());
    expectOnlyAllowedAnswers(sent);
    await expectLocksRetaken(locksBefore);
    await expectBilledOnce();
  }, 90_000);

  it("kill -9 of the postmaster alone, then crash recovery: the same", async () => {
    const { sent, locksBefore } = await underLoad(() => cluster!.killPostmasterAndStart(500));
    expectOnlyAllowedAnswers(sent);
    await expectLocksRetaken(locksBefore);
    await expectBilledOnce();
  }, 90_000);

  it("kill -9 of the whole server, unwritten WAL lost, then crash recovery: nothing lost or doubled", async () => {
    const { sent, locksBefore } = await underLoad(() => cluster!.killServerAndStart(500));
    expectOnlyAllowedAnswers(sent);
    await expectLocksRetaken(locksBefore);
    await expectBilledOnce();
    await expectLedgerVerifies();
  }, 90_000);
});
