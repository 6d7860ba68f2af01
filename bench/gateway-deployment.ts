import type pg from "pg";
import { modelFamilies } from "../src/config";
import type { LoadResult } from "./load-generator";
import { startChild } from "./processes/child-process";

/**
 * The gateway as the benchmarks deploy it, and what they do to it through the same APIs an operator uses:
 * start it (scale-out or one process), provision a key with credit, wait until every usage is charged.
 */

export const secrets = {
  SESSION_SECRET: "bench-session-secret-0123456789abcdef0123456789",
  KEY_PEPPER: "bench-key-pepper-0123456789abcdef0123456789abcd",
  ADMIN_TOKEN: "bench-admin-token-0123456789abcdef0123456789ab",
};

/** The zero-latency upstream serves `gamma`, the 5 ms one `epsilon`; both speak chat-completions. */
export const fastModel = "gamma-4-5";
export const slowModel = "epsilon-pro";
export const slowFamily = "epsilon";
export const prompt = "Summarise the benefits of event sourcing in two sentences.";
/** About 400 input tokens on `epsilon-pro`: each request costs more than ₩1, so an overdraft can show. */
export const costlyPrompt = Array.from({ length: 30 }, () => prompt).join(" ");

export function chatBody(stream: boolean, model = fastModel, content = prompt): string {
  return JSON.stringify({
    model,
    messages: [{ role: "user", content }],
    max_tokens: 64,
    stream,
    ...(stream ? { stream_options: { include_usage: true } } : {}),
  });
}

/** The gateway's environment, each model family served by `upstreamUrlOf(family)` (a simulator). */
export function gatewayEnvironment(
  databaseUrl: string,
  upstreamUrlOf: (family: string) => string,
  redisUrl: string | undefined,
): NodeJS.ProcessEnv {
  const upstreams = Object.fromEntries(
    modelFamilies.flatMap((family) => [
      [`${family.toUpperCase()}_BASE_URL`, upstreamUrlOf(family)],
      [`${family.toUpperCase()}_API_KEY`, "bench"],
    ]),
  );
  return {
    ...process.env,
    ...secrets,
    ...upstreams,
    DATABASE_URL: databaseUrl,
    ...(redisUrl ? { REDIS_URL: redisUrl } : {}),
    HOST: "127.0.0.1",
    LOG_LEVEL: "info",
  };
}

export type Deployment = "scale-out" | "one process";

export interface RunningDeployment {
  origin: string;
  /** The processes that serve it: one `npm start`, or a gateway and a worker. */
  pids: { gateway: number; worker: number | undefined };
  stop(): Promise<void>;
}

/** Starts the gateway as deployed; resolves once it listens (a gateway-role edge waits for the worker). */
export async function startDeployment(
  deployment: Deployment,
  environment: NodeJS.ProcessEnv,
): Promise<RunningDeployment> {
  // A port the system picks, read back from the gateway's log line: one picked beforehand could be taken.
  const withPort = { ...environment, PORT: "0" };
  if (deployment === "one process") {
    const all = await startChild("src/main.ts", [], withPort, /gateway listening/);
    return {
      origin: originOf(all.line),
      pids: { gateway: all.child.pid!, worker: undefined },
      stop: () => all.stop(),
    };
  }
  const worker = await startChild("src/main.ts", ["--role=worker"], withPort, /worker running/);
  const gateway = await startChild("src/main.ts", ["--role=gateway"], withPort, /gateway listening/);
  return {
    origin: originOf(gateway.line),
    pids: { gateway: gateway.child.pid!, worker: worker.child.pid! },
    stop: async () => {
      await gateway.stop();
      await worker.stop();
    },
  };
}

/** One more gateway-role process beside a running deployment (scale-out: they share its database). */
export async function startAnotherGateway(
  environment: NodeJS.ProcessEnv,
): Promise<{ origin: string; pid: number; stop(): Promise<void> }> {
  const gateway = await startChild(
    "src/main.ts",
    ["--role=gateway"],
    { ...environment, PORT: "0" },
    /gateway listening/,
  );
  return { origin: originOf(gateway.line), pid: gateway.child.pid!, stop: () => gateway.stop() };
}

/** The origin in a "gateway listening" log line's base URL. */
function originOf(listeningLine: string): string {
  const { baseUrl } = JSON.parse(listeningLine) as { baseUrl: string };
  return new URL(baseUrl).origin;
}

/** Waits until the reconciler has charged every recorded usage. */
export async function untilEverythingCharged(client: pg.Client): Promise<void> {
  const deadline = Date.now() + 600_000;
  for (;;) {
    const pending = await client.query<{ count: number }>(
      "SELECT count(*)::int AS count FROM projection_pending_charges",
    );
    if (pending.rows[0]!.count === 0) return;
    if (Date.now() > deadline) throw new Error("the reconciler did not catch up within 10 minutes");
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/**
 * Lag from UsageRecorded to UsageCharged (commit times in the ledger), p50 and p99, of the usage recorded
 * within any of `recordedWithin` or charged to `account`. Call it once the backlog is charged.
 */
export async function chargeLagMs(
  client: pg.Client,
  usage: { recordedWithin: readonly { from: Date; to: Date }[] } | { account: { kind: string; id: string } },
): Promise<{ p50: number; p99: number }> {
  const windows = "recordedWithin" in usage ? usage.recordedWithin : undefined;
  const account = "account" in usage ? usage.account : undefined;
  const result = await client.query<{ p50: number | null; p99: number | null }>(
    `SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY lag_ms) AS p50,
            percentile_cont(0.99) WITHIN GROUP (ORDER BY lag_ms) AS p99
     FROM (
       SELECT extract(epoch FROM charged.recorded_at - recorded.recorded_at) * 1000 AS lag_ms
       FROM ledger_events recorded
       JOIN ledger_events charged ON charged.stream_id = recorded.stream_id AND charged.type = 'UsageCharged'
       WHERE recorded.type = 'UsageRecorded'
         AND ($1::timestamptz[] IS NULL OR EXISTS (
           SELECT 1 FROM unnest($1::timestamptz[], $2::timestamptz[]) AS window_range(range_from, range_to)
           WHERE recorded.recorded_at BETWEEN window_range.range_from AND window_range.range_to))
         AND ($3::text IS NULL OR (recorded.data->'account'->>'kind' = $3 AND recorded.data->'account'->>'id' = $4))
     ) lags`,
    [
      windows?.map((range) => range.from) ?? null,
      windows?.map((range) => range.to) ?? null,
      account?.kind ?? null,
      account?.id ?? null,
    ],
  );
  return { p50: Number(result.rows[0]!.p50), p99: Number(result.rows[0]!.p99) };
}

export function assertHealthy(result: LoadResult, label: string): void {
  if (result.failures > 0)
    throw new Error(`${label}: ${result.failures} of ${result.requests} requests failed`);
}

/**
 * A user, a session, a key and credit on the user's account, through the same APIs an operator uses. A
 * top-up answered 503 (the ledger or the balances projection busy) may or may not be appended; the account's
 * inline funds, exact at each commit, tell which, so it is retried only when it was not (never credited twice).
 */
export async function provisionKey(
  origin: string,
  database: pg.Client,
  userId = "bench",
  creditWon = "1000000000",
): Promise<string> {
  const token = await signIn(origin, userId);
  for (let attempt = 1; ; attempt++) {
    const credited = await asAdmin(origin, `/accounts/user/${userId}/credits`, {
      amountWon: creditWon,
      reference: "bench",
    });
    if (credited.status === 201) break;
    if (credited.status !== 503 || attempt === 5)
      throw new Error(`crediting the account of ${userId} failed: ${credited.status}`);
    const funds = await database.query<{ balance: string }>(
      "SELECT balance_won::text AS balance FROM account_funds WHERE account_kind = 'user' AND account_id = $1",
      [userId],
    );
    if (funds.rows.length > 0 && Number(funds.rows[0]!.balance) === Number(creditWon)) break;
    await new Promise((resolve) => setTimeout(resolve, 1_000));
  }
  return issueKey(origin, token, userId);
}

/** Another key on a user's account, with no credit added. */
export async function provisionAnotherKey(origin: string, userId: string): Promise<string> {
  return issueKey(origin, await signIn(origin, userId), userId);
}

function asAdmin(origin: string, path: string, body: unknown): Promise<Response> {
  return fetch(`${origin}/admin${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${secrets.ADMIN_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

async function signIn(origin: string, userId: string): Promise<string> {
  const signedIn = await asAdmin(origin, "/sessions", { userId });
  return ((await signedIn.json()) as { token: string }).token;
}

async function issueKey(origin: string, token: string, userId: string): Promise<string> {
  const issued = await fetch(`${origin}/llm/apis`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ name: "bench" }),
  });
  if (issued.status !== 201) throw new Error(`issuing a key for ${userId} failed: ${issued.status}`);
  return ((await issued.json()) as { key: string }).key;
}
