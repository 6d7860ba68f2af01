import pg from "pg";
import { queueBackendOf } from "../src/billing/queue-backend";
import { modelFamilies } from "../src/config";
import { findFreePort } from "../src/database/embedded-postgres";
import { removeQueueData } from "../test/workers/queue-test-support";
import { createBenchDatabase } from "./bench-database";
import { type LoadResult, runLoad } from "./load-generator";
import type { Figure } from "./measure";
import { startChild } from "./processes/child-process";

/**
 * Gateway benchmark (C9): the gateway against the same simulator called directly, in one run. Every gateway
 * request is authenticated, balance-checked, recorded in the ledger and charged by the worker.
 *
 * Measured as deployed for scale-out (`start:gateway` + `start:worker`, one process each: the edge serves,
 * the worker runs the projections and the reconciler), then throughput again as one `npm start` process.
 * Beside the JSON latency, the floor under it: a bare proxy, then the same proxy committing one row first.
 */

const throughputConnections = 32;
const requestsMax = 20_000;
const durationMsMax = 10_000;
const latencyRequests = 1_000;

const secrets = {
  SESSION_SECRET: "bench-session-secret-0123456789abcdef0123456789",
  KEY_PEPPER: "bench-key-pepper-0123456789abcdef0123456789abcd",
  ADMIN_TOKEN: "bench-admin-token-0123456789abcdef0123456789ab",
};

function chatBody(stream: boolean): string {
  return JSON.stringify({
    model: "gamma-4-5",
    messages: [{ role: "user", content: "Summarise the benefits of event sourcing in two sentences." }],
    max_tokens: 64,
    stream,
    ...(stream ? { stream_options: { include_usage: true } } : {}),
  });
}

type Deployment = "scale-out" | "one process";

/** Endpoints measured beside the gateway: the simulator itself, and a bare proxy in front of it. */
type Reference = "direct" | "bare proxy" | "bare proxy + commit";

interface RunningDeployment {
  origin: string;
  stop(): Promise<void>;
}

/** Starts the gateway as deployed; resolves once it listens (a gateway-role edge waits for the worker). */
async function startDeployment(
  deployment: Deployment,
  environment: NodeJS.ProcessEnv,
): Promise<RunningDeployment> {
  const port = await findFreePort();
  const withPort = { ...environment, PORT: String(port) };
  if (deployment === "one process") {
    const all = await startChild("src/main.ts", [], withPort, /gateway listening/);
    return { origin: `http://127.0.0.1:${port}`, stop: () => all.stop() };
  }
  const worker = await startChild("src/main.ts", ["--role=worker"], withPort, /worker running/);
  const gateway = await startChild("src/main.ts", ["--role=gateway"], withPort, /gateway listening/);
  return {
    origin: `http://127.0.0.1:${port}`,
    stop: async () => {
      await gateway.stop();
      await worker.stop();
    },
  };
}

export async function runGatewayBenchmarks(options: { redisUrl?: string }): Promise<Figure[]> {
  const database = await createBenchDatabase();
  const simulator = await startChild("bench/processes/simulator-process.ts", [], process.env, /^http:\/\//);
  const simulatorUrl = simulator.line.trim();
  const floorProxy = await startChild(
    "bench/processes/durable-proxy-process.ts",
    [],
    { ...process.env, UPSTREAM_URL: simulatorUrl, DATABASE_URL: database.url },
    /^http:\/\//,
  );
  const floorProxyUrl = floorProxy.line.trim();
  const upstreamEnvironment = Object.fromEntries(
    modelFamilies.flatMap((family) => [
      [`${family.toUpperCase()}_BASE_URL`, simulatorUrl],
      [`${family.toUpperCase()}_API_KEY`, "bench"],
    ]),
  );
  const environment = {
    ...process.env,
    ...secrets,
    ...upstreamEnvironment,
    DATABASE_URL: database.url,
    ...(options.redisUrl ? { REDIS_URL: options.redisUrl } : {}),
    HOST: "127.0.0.1",
    LOG_LEVEL: "info",
  };
  const figures: Figure[] = [];
  const windows: Record<"loaded" | "light", { from: Date; to: Date }[]> = { loaded: [], light: [] };
  let running: RunningDeployment | undefined;
  try {
    running = await startDeployment("scale-out", environment);
    const apiKey = await provisionKey(running.origin);
    // Each run, direct or not, starts with the previous runs' usage charged, so none pays for their backlog.
    const endpoints: Record<Reference, { origin: string; path: string }> = {
      direct: { origin: simulatorUrl, path: "/chat/completions" },
      "bare proxy": { origin: floorProxyUrl, path: "/without-commit/chat/completions" },
      "bare proxy + commit": { origin: floorProxyUrl, path: "/chat/completions" },
    };
    /** `target`: a reference endpoint by name, or a gateway's origin. */
    const load = async (
      target: Reference | string,
      stream: boolean,
      connections: number,
      requests: number,
    ) => {
      await untilEverythingCharged(database.url);
      const reference = endpoints[target as Reference];
      return runLoad({
        origin: reference?.origin ?? target,
        path: reference?.path ?? "/llm/v1/chat/completions",
        headers: { authorization: reference ? "Bearer bench" : `Bearer ${apiKey}` },
        body: chatBody(stream),
        connections,
        requestsMax: requests,
        durationMsMax,
      });
    };
    const during = async <T>(window: "loaded" | "light", work: () => Promise<T>): Promise<T> => {
      const from = new Date();
      const result = await work();
      windows[window].push({ from, to: new Date() });
      return result;
    };
    const throughput = async (origin: string, stream: boolean, suffix: string): Promise<Figure> => {
      const mode = stream ? "streaming" : "JSON";
      const direct = await load("direct", stream, throughputConnections, requestsMax);
      const viaGateway = await during("loaded", () =>
        load(origin, stream, throughputConnections, requestsMax),
      );
      assertHealthy(viaGateway, `gateway ${mode}${suffix}`);
      return {
        name: `gateway req/s, ${mode}, 32 connections${suffix}`,
        value: viaGateway.requestsPerSecond,
        unit: "req/s",
        baseline: direct.requestsPerSecond,
        baselineName: "simulator called directly",
        target: "≥ 3,000 req/s",
      };
    };

    // Warm both paths (JIT, connection pools, prepared statements) before measuring.
    await load(running.origin, false, 8, 500);
    await load("direct", false, 8, 500);
    await load("bare proxy", false, 8, 500);
    await load("bare proxy + commit", false, 8, 500);
    for (const stream of [false, true]) {
      const mode = stream ? "streaming" : "JSON";
      figures.push(await throughput(running.origin, stream, ""));
      const directLatency = await load("direct", stream, 1, latencyRequests);
      const gatewayLatency = await during("light", () => load(running!.origin, stream, 1, latencyRequests));
      assertHealthy(gatewayLatency, `gateway ${mode} latency`);
      figures.push({
        name: `added latency p50, ${mode}, 1 connection`,
        value: gatewayLatency.p50Ms - directLatency.p50Ms,
        unit: "ms",
        baseline: directLatency.p50Ms,
        baselineName: "direct p50",
        target: "≤ 0.5 ms",
      });
      figures.push({
        name: `added latency p99, ${mode}, 1 connection`,
        value: gatewayLatency.p99Ms - directLatency.p99Ms,
        unit: "ms",
        baseline: directLatency.p99Ms,
        baselineName: "direct p99",
      });
      // The floor under the gateway's figure: what a proxy adds on this machine, now, with and without
      // making each request durable before answering.
      for (const reference of stream ? [] : (["bare proxy", "bare proxy + commit"] as const)) {
        const referenceLatency = await load(reference, false, 1, latencyRequests);
        assertHealthy(referenceLatency, `${reference} latency`);
        figures.push({
          name: `added latency p50, JSON, 1 connection, ${reference}`,
          value: referenceLatency.p50Ms - directLatency.p50Ms,
          unit: "ms",
          baseline: directLatency.p50Ms,
          baselineName: "direct p50",
        });
      }
    }
    figures.push(...(await chargeLagFigures(database.url, windows)));

    await running.stop();
    running = await startDeployment("one process", environment);
    await load(running.origin, false, 8, 500);
    for (const stream of [false, true]) figures.push(await throughput(running.origin, stream, ", npm start"));
  } finally {
    await running?.stop();
    await floorProxy.stop();
    await simulator.stop();
    await database.drop();
    await removeQueueData(queueBackendOf({ redisUrl: options.redisUrl, databaseUrl: database.url }));
  }
  return figures;
}

/**
 * Lag from UsageRecorded to UsageCharged (commit times in the ledger) for the usage recorded while the
 * gateway was under load, beside the same lag for usage recorded at one connection. Waits for the
 * reconciler to finish the backlog first.
 */
async function chargeLagFigures(
  databaseUrl: string,
  windows: Record<"loaded" | "light", { from: Date; to: Date }[]>,
): Promise<Figure[]> {
  await untilEverythingCharged(databaseUrl);
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const lag = async (ranges: { from: Date; to: Date }[]) => {
      const result = await client.query<{ p50: number; p99: number }>(
        `SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY lag_ms) AS p50,
                percentile_cont(0.99) WITHIN GROUP (ORDER BY lag_ms) AS p99
         FROM (
           SELECT extract(epoch FROM charged.recorded_at - recorded.recorded_at) * 1000 AS lag_ms
           FROM ledger_events recorded
           JOIN ledger_events charged ON charged.stream_id = recorded.stream_id AND charged.type = 'UsageCharged'
           JOIN unnest($1::timestamptz[], $2::timestamptz[]) AS window_range(range_from, range_to)
             ON recorded.recorded_at BETWEEN window_range.range_from AND window_range.range_to
           WHERE recorded.type = 'UsageRecorded'
         ) lags`,
        [ranges.map((range) => range.from), ranges.map((range) => range.to)],
      );
      return result.rows[0]!;
    };
    const loaded = await lag(windows.loaded);
    const light = await lag(windows.light);
    return [
      {
        name: "charge lag p50 (recorded → charged), gateway under load",
        value: Number(loaded.p50),
        unit: "ms",
        baseline: Number(light.p50),
        baselineName: "same lag at 1 connection",
      },
      {
        name: "charge lag p99 (recorded → charged), gateway under load",
        value: Number(loaded.p99),
        unit: "ms",
        baseline: Number(light.p99),
        baselineName: "same lag at 1 connection",
      },
    ];
  } finally {
    await client.end();
  }
}

/** Waits until the reconciler has charged every recorded usage. */
async function untilEverythingCharged(databaseUrl: string): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const deadline = Date.now() + 600_000;
    for (;;) {
      const pending = await client.query<{ count: number }>(
        "SELECT count(*)::int AS count FROM projection_pending_charges",
      );
      if (pending.rows[0]!.count === 0) return;
      if (Date.now() > deadline) throw new Error("the reconciler did not catch up within 10 minutes");
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  } finally {
    await client.end();
  }
}

function assertHealthy(result: LoadResult, label: string): void {
  if (result.failures > 0)
    throw new Error(`${label}: ${result.failures} of ${result.requests} requests failed`);
}

/** A session, a key and ₩1,000,000,000 of credit, through the same APIs an operator uses. */
async function provisionKey(origin: string): Promise<string> {
  const admin = (path: string, body: unknown) =>
    fetch(`${origin}/admin${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${secrets.ADMIN_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
  const { token } = (await (await admin("/sessions", { userId: "bench" })).json()) as { token: string };
  const credited = await admin("/accounts/user/bench/credits", {
    amountWon: "1000000000",
    reference: "bench",
  });
  if (credited.status !== 201) throw new Error(`crediting the bench account failed: ${credited.status}`);
  const issued = await fetch(`${origin}/llm/apis`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ name: "bench" }),
  });
  return ((await issued.json()) as { key: string }).key;
}
