import { setTimeout as sleep } from "node:timers/promises";
import { Redis } from "ioredis";
import pg from "pg";
import { queueBackendOf } from "../src/billing/queue/queue-backend";
import { removeQueueData } from "../src/billing/queue/remove-queue-data";
import { modelFamilies } from "../src/config";
import { createBenchDatabase } from "./bench-database";
import {
  assertHealthy,
  chatBody,
  provisionAnotherKey,
  provisionKey,
  type RunningDeployment,
  secrets,
  startDeployment,
  untilEverythingCharged,
} from "./gateway-deployment";
import { type LoadResult, runLoad } from "./load-generator";
import type { Figure } from "./measure";
import { backendPidsOf } from "./process-cpu";
import { startChild } from "./processes/child-process";
import {
  costPerRequest,
  hasStatementStatistics,
  type ProcessKindPids,
  postgresBackgroundPids,
  type RequestCost,
  readCostCounters,
  redisServerPid,
} from "./request-cost";

/**
 * Issue 26's breakdown: what one JSON request costs the whole box — events, rows, statements, WAL, and CPU
 * by kind of process — through the gateway (edge + worker, as deployed for scale-out) beside the floor (a bare
 * proxy committing one row per request), at 32 connections and at one, in the same run. Then throughput with
 * 1,000 keys over 1,000 accounts and over one account, beside one key.
 *
 * Statements are counted only where the server loads `pg_stat_statements`; WAL and background CPU are the
 * server's, so run it on a quiet one (`DATABASE_URL` pointing at a cluster of its own).
 */

const loadedConnections = 32;
const loadedRequests = 10_000;
const lightRequests = 1_000;
const durationMsMax = 20_000;
const manyKeys = Number(process.env.BENCH_MANY_KEYS ?? 1_000);
const provisioningConcurrency = 16;
/** Backends report their table and database counters at most once a second while busy. */
const statisticsFlushMs = 1_500;

interface Setting {
  label: string;
  connections: number;
  requests: number;
}

const settings: readonly Setting[] = [
  { label: "32 connections", connections: loadedConnections, requests: loadedRequests },
  { label: "1 connection", connections: 1, requests: lightRequests },
];

export async function runRequestCostBenchmarks(options: { redisUrl?: string }): Promise<Figure[]> {
  const database = await createBenchDatabase();
  const monitor = new pg.Client({ connectionString: database.url, application_name: "bench-monitor" });
  await monitor.connect();
  const redis = options.redisUrl ? new Redis(options.redisUrl, { lazyConnect: true }) : undefined;
  const children: { stop(): Promise<void> }[] = [];
  let running: RunningDeployment | undefined;
  try {
    const simulator = await startChild("bench/processes/simulator-process.ts", [], process.env, /^http:/);
    children.push(simulator);
    const simulatorUrl = simulator.line.trim();
    const proxy = await startChild(
      "bench/processes/durable-proxy-process.ts",
      [],
      { ...process.env, UPSTREAM_URL: simulatorUrl, DATABASE_URL: database.url },
      /^http:/,
    );
    children.push(proxy);
    running = await startDeployment("scale-out", gatewayEnvironment(database.url, simulatorUrl, options));
    const withStatements = await hasStatementStatistics(monitor);
    const hotKey = await provisionKey(running.origin, monitor);
    const floorKinds: ProcessKindPids = {
      proxy: async () => [proxy.child.pid!],
      "postgres backends": () => backendPidsOf(monitor, { only: ["bench-durable-proxy"] }),
      "postgres background": () => postgresBackgroundPids(monitor),
    };
    const { gateway, worker } = running.pids;
    const gatewayKinds: ProcessKindPids = {
      gateway: async () => [gateway],
      worker: async () => (worker === undefined ? [] : [worker]),
      "postgres backends": () => backendPidsOf(monitor, { except: ["bench-durable-proxy", "bench-monitor"] }),
      "postgres background": () => postgresBackgroundPids(monitor),
      ...(redis ? { redis: () => redisServerPid(() => redis.info("server")) } : {}),
    };
    const floorLoad = (setting: Setting) =>
      load(proxy.line.trim(), "/chat/completions", ["bench"], setting, `floor, ${setting.label}`);
    const gatewayLoad = (setting: Setting, keys: readonly string[] = [hotKey]) =>
      load(running!.origin, "/llm/v1/chat/completions", keys, setting, `gateway, ${setting.label}`);
    // Warm every path (JIT, pools, prepared statements) before counting.
    await floorLoad({ label: "warm", connections: 8, requests: 500 });
    await gatewayLoad({ label: "warm", connections: 8, requests: 500 });

    const figures: Figure[] = [];
    for (const setting of settings) {
      const measure = async (kinds: ProcessKindPids, run: () => Promise<LoadResult>) => {
        await untilEverythingCharged(monitor);
        await sleep(statisticsFlushMs);
        const before = await readCostCounters(monitor, kinds, withStatements);
        const result = await run();
        await untilEverythingCharged(monitor);
        await sleep(statisticsFlushMs);
        const after = await readCostCounters(monitor, kinds, withStatements);
        return { result, cost: costPerRequest(before, after, result.requests) };
      };
      const floor = await measure(floorKinds, () => floorLoad(setting));
      const measured = await measure(gatewayKinds, () => gatewayLoad(setting));
      printBreakdown(setting.label, measured.cost, floor.cost);
      figures.push(...breakdownFigures(setting, measured, floor));
    }
    figures.push(...(await keyScaleFigures(running.origin, monitor, hotKey, gatewayLoad)));
    return figures;
  } finally {
    await running?.stop();
    for (const child of children.reverse()) await child.stop();
    await monitor.end();
    redis?.disconnect();
    await database.drop();
    await removeQueueData(queueBackendOf({ redisUrl: options.redisUrl, databaseUrl: database.url }));
  }
}

function gatewayEnvironment(
  databaseUrl: string,
  simulatorUrl: string,
  options: { redisUrl?: string },
): NodeJS.ProcessEnv {
  const upstreams = Object.fromEntries(
    modelFamilies.flatMap((family) => [
      [`${family.toUpperCase()}_BASE_URL`, simulatorUrl],
      [`${family.toUpperCase()}_API_KEY`, "bench"],
    ]),
  );
  return {
    ...process.env,
    ...secrets,
    ...upstreams,
    DATABASE_URL: databaseUrl,
    ...(options.redisUrl ? { REDIS_URL: options.redisUrl } : {}),
    HOST: "127.0.0.1",
    LOG_LEVEL: "info",
  };
}

async function load(
  origin: string,
  path: string,
  keys: readonly string[],
  setting: Setting,
  label: string,
): Promise<LoadResult> {
  const result = await runLoad({
    origin,
    path,
    headers: { authorization: `Bearer ${keys[0]}` },
    headersFor:
      keys.length === 1
        ? undefined
        : (request) => ({ authorization: `Bearer ${keys[request % keys.length]}` }),
    body: chatBody(false),
    connections: setting.connections,
    requestsMax: setting.requests,
    durationMsMax,
  });
  assertHealthy(result, label);
  return result;
}

/**
 * Throughput at 32 connections with many keys, each request on the next key: over as many accounts, and all
 * on one account; beside the one hot key, measured between them so drift shows.
 */
async function keyScaleFigures(
  origin: string,
  monitor: pg.Client,
  hotKey: string,
  gatewayLoad: (setting: Setting, keys?: readonly string[]) => Promise<LoadResult>,
): Promise<Figure[]> {
  const spreadKeys = await provisionKeys(manyKeys, (index) =>
    provisionKey(origin, monitor, `bench-spread-${index}`),
  );
  const sharedUser = "bench-shared";
  const sharedKeys = [await provisionKey(origin, monitor, sharedUser)];
  sharedKeys.push(...(await provisionKeys(manyKeys - 1, () => provisionAnotherKey(origin, sharedUser))));
  const setting = { label: "32 connections", connections: loadedConnections, requests: loadedRequests };
  const throughput = async (keys: readonly string[]) => {
    await untilEverythingCharged(monitor);
    // Each key's first request reads it into the gateway's cache: warm them all before measuring.
    await gatewayLoad({ label: "warm", connections: 8, requests: keys.length }, keys);
    await untilEverythingCharged(monitor);
    return (await gatewayLoad(setting, keys)).requestsPerSecond;
  };
  const oneKey = await throughput([hotKey]);
  const spread = await throughput(spreadKeys);
  const shared = await throughput(sharedKeys);
  const oneKeyAgain = await throughput([hotKey]);
  const oneKeyMean = (oneKey + oneKeyAgain) / 2;
  return [
    {
      name: `gateway req/s, JSON, 32 connections, ${manyKeys} keys over ${manyKeys} accounts`,
      value: spread,
      unit: "req/s",
      baseline: oneKeyMean,
      baselineName: `one key (runs before and after: ${Math.round(oneKey)}, ${Math.round(oneKeyAgain)})`,
      target: "≥ 0.9× baseline (issue 26)",
    },
    {
      name: `gateway req/s, JSON, 32 connections, ${manyKeys} keys on one account`,
      value: shared,
      unit: "req/s",
      baseline: spread,
      baselineName: `${manyKeys} keys over ${manyKeys} accounts`,
      target: "≥ 0.8× baseline (issue 26)",
    },
  ];
}

async function provisionKeys(
  count: number,
  provision: (index: number) => Promise<string>,
): Promise<string[]> {
  const keys: string[] = new Array(count);
  let next = 0;
  await Promise.all(
    Array.from({ length: provisioningConcurrency }, async () => {
      while (next < count) {
        const index = next++;
        keys[index] = await provision(index);
      }
    }),
  );
  return keys;
}

function breakdownFigures(
  setting: Setting,
  measured: { result: LoadResult; cost: RequestCost },
  floor: { result: LoadResult; cost: RequestCost },
): Figure[] {
  const totalCpu = (cost: RequestCost) =>
    Object.values(cost.cpuUsPerRequest).reduce((sum, us) => sum + us, 0);
  const beside = (name: string, value: number, baseline: number, unit: string, target?: string): Figure => ({
    name: `per request, JSON, ${setting.label}: ${name}`,
    value,
    unit,
    baseline,
    baselineName: "bare proxy + 1 commit",
    ...(target ? { target } : {}),
  });
  const figures = [
    beside(
      "CPU, whole box",
      totalCpu(measured.cost),
      totalCpu(floor.cost),
      "µs",
      "≤ 1.5× baseline (issue 26)",
    ),
    beside("rows written", measured.cost.rowsPerRequest, floor.cost.rowsPerRequest, "rows"),
    beside("WAL bytes", measured.cost.walBytesPerRequest, floor.cost.walBytesPerRequest, "bytes"),
    beside("WAL flushes", measured.cost.walSyncsPerRequest, floor.cost.walSyncsPerRequest, "syncs"),
    beside(
      "transactions",
      measured.cost.transactionsPerRequest,
      floor.cost.transactionsPerRequest,
      "commits",
    ),
    beside("throughput", measured.result.requestsPerSecond, floor.result.requestsPerSecond, "req/s"),
    beside("latency p50", measured.result.p50Ms, floor.result.p50Ms, "ms"),
  ];
  if (measured.cost.statementsPerRequest !== undefined && floor.cost.statementsPerRequest !== undefined)
    figures.push(
      beside("statements", measured.cost.statementsPerRequest, floor.cost.statementsPerRequest, "statements"),
    );
  return figures;
}

function printBreakdown(label: string, cost: RequestCost, floor: RequestCost): void {
  const fixed = (value: number) => (value >= 100 ? Math.round(value).toLocaleString("en") : value.toFixed(2));
  console.log(`\nCost per JSON request, ${label} (${cost.requests} requests; floor: ${floor.requests})`);
  console.table({
    events: { gateway: fixed(cost.eventsPerRequest), floor: fixed(floor.eventsPerRequest) },
    "rows written": { gateway: fixed(cost.rowsPerRequest), floor: fixed(floor.rowsPerRequest) },
    statements: {
      gateway: cost.statementsPerRequest === undefined ? "n/a" : fixed(cost.statementsPerRequest),
      floor: floor.statementsPerRequest === undefined ? "n/a" : fixed(floor.statementsPerRequest),
    },
    transactions: { gateway: fixed(cost.transactionsPerRequest), floor: fixed(floor.transactionsPerRequest) },
    "WAL bytes": { gateway: fixed(cost.walBytesPerRequest), floor: fixed(floor.walBytesPerRequest) },
    "WAL flushes": { gateway: fixed(cost.walSyncsPerRequest), floor: fixed(floor.walSyncsPerRequest) },
    ...Object.fromEntries(
      [...new Set([...Object.keys(cost.cpuUsPerRequest), ...Object.keys(floor.cpuUsPerRequest)])].map(
        (kind) => [
          `CPU µs: ${kind}`,
          { gateway: fixed(cost.cpuUsPerRequest[kind] ?? 0), floor: fixed(floor.cpuUsPerRequest[kind] ?? 0) },
        ],
      ),
    ),
  });
  console.log("Rows written per request, by table:");
  console.table(Object.fromEntries(cost.rowsByTablePerRequest.map(([table, rows]) => [table, fixed(rows)])));
  if (cost.topStatements) {
    console.log("Statements per request, by execution time:");
    console.table(
      cost.topStatements.slice(0, 25).map((statement) => ({
        calls: fixed(statement.callsPerRequest),
        µs: fixed(statement.executionUsPerRequest),
        statement: statement.text.replace(/\s+/g, " ").slice(0, 110),
      })),
    );
  }
}
