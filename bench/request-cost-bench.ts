import { setTimeout as sleep } from "node:timers/promises";
import { Redis } from "ioredis";
import pg from "pg";
import { removeDeploymentQueueData } from "../src/billing/queue/remove-queue-data";
import { createBenchDatabase } from "./bench-database";
import {
  assertHealthy,
  chatBody,
  gatewayEnvironment,
  provisionAnotherKey,
  provisionKey,
  type RunningDeployment,
  startDeployment,
  untilEverythingCharged,
} from "./gateway-deployment";
import { type LoadResult, runLoad } from "./load-generator";
import type { Figure } from "./measure";
import { printPerfBreakdown } from "./perf-breakdown";
import { perfDirectory, startPerfRecording } from "./perf-record";
import { backendKindsByApplication, backendPidsOf } from "./process-cpu";
import { startChild } from "./processes/child-process";
import {
  costPerRequest,
  hasStatementStatistics,
  type ProcessKindPids,
  postgresBackgroundPids,
  type RequestCost,
  readCostCounters,
  readCpu,
  redisServerPid,
} from "./request-cost";
import { warmUp, warmUpAtOneConnection } from "./warm-up";

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
/**
 * Backends report their table, database and WAL counters at most once a second while busy, and an idle one
 * within 10 s (PostgreSQL 15's PGSTAT_IDLE_INTERVAL): wait that out before each reading.
 */
const statisticsFlushMs = 11_000;

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
    running = await startDeployment(
      "scale-out",
      gatewayEnvironment(database.url, () => simulatorUrl, options.redisUrl),
    );
    const withStatements = await hasStatementStatistics(monitor);
    const hotKey = await provisionKey(running.origin, monitor);
    const floorKinds = floorProcessKinds(monitor, proxy.child.pid!);
    const floorLoad = (setting: Setting) =>
      load(proxy.line.trim(), "/chat/completions", ["bench"], setting, `floor, ${setting.label}`);
    const gatewayLoad = (setting: Setting, keys: readonly string[] = [hotKey]) =>
      load(running!.origin, "/llm/v1/chat/completions", keys, setting, `gateway, ${setting.label}`);
    // Warm every path (compiled code, pools, prepared statements) before counting.
    await floorLoad({ label: "warm", ...warmUp });
    await gatewayLoad({ label: "warm", ...warmUp });
    // After the warm-up, so that every pool has connected under its name.
    const gatewayKinds = await gatewayProcessKinds(monitor, running, redis);

    const measure = async (label: string, kinds: ProcessKindPids, run: () => Promise<LoadResult>) => {
      await untilEverythingCharged(monitor);
      await sleep(statisticsFlushMs);
      const before = { counters: await readCostCounters(monitor, withStatements), cpu: await readCpu(kinds) };
      const recording = perfDirectory ? await startPerfRecording(label) : undefined;
      let result: LoadResult;
      let perfData: string | undefined;
      try {
        result = await run();
        await untilEverythingCharged(monitor);
      } finally {
        // Stopped whatever happened: left running, it would record the machine until it filled the disk.
        perfData = await recording?.stop();
      }
      const cpu = await readCpu(kinds);
      if (perfData)
        await printPerfBreakdown(label, perfData, cpu, result.requests, { simulator: simulator.child.pid! });
      await sleep(statisticsFlushMs);
      const after = { counters: await readCostCounters(monitor, withStatements), cpu };
      return { result, cost: costPerRequest(before, after, result.requests) };
    };
    const figures: Figure[] = [];
    for (const setting of settings) {
      if (setting.connections === 1) {
        await floorLoad({ label: "warm", ...warmUpAtOneConnection });
        await gatewayLoad({ label: "warm", ...warmUpAtOneConnection });
      }
      const floor = await measure(`floor, ${setting.label}`, floorKinds, () => floorLoad(setting));
      const measured = await measure(`gateway, ${setting.label}`, gatewayKinds, () => gatewayLoad(setting));
      printBreakdown(`${setting.label}, one key`, measured.cost, floor.cost);
      figures.push(...breakdownFigures(setting, measured, floor));
    }
    const keys = await provisionManyKeys(running.origin, monitor);
    // The same breakdown with each request on the next of many keys over as many accounts: what aggregation
    // on one hot account saves shows in the rows and statements per request.
    const loaded = settings[0]!;
    await gatewayLoad({ label: "warm", connections: 8, requests: keys.spread.length }, keys.spread);
    const spreadLabel = `${loaded.label}, ${manyKeys} accounts`;
    const spreadFloor = await measure(`floor, ${spreadLabel}`, floorKinds, () => floorLoad(loaded));
    const spread = await measure(`gateway, ${spreadLabel}`, gatewayKinds, () =>
      gatewayLoad(loaded, keys.spread),
    );
    printBreakdown(
      `${loaded.label}, ${manyKeys} keys over ${manyKeys} accounts`,
      spread.cost,
      spreadFloor.cost,
    );
    figures.push(...breakdownFigures({ ...loaded, label: spreadLabel }, spread, spreadFloor));
    figures.push(...(await keyScaleFigures(monitor, hotKey, keys, gatewayLoad)));
    return figures;
  } finally {
    await running?.stop();
    for (const child of children.reverse()) await child.stop();
    await monitor.end();
    redis?.disconnect();
    await removeDeploymentQueueData({ redisUrl: options.redisUrl, databaseUrl: database.url });
    await database.drop();
  }
}

/** The benchmark's own connections: the floor's proxy and the monitor. */
const benchApplications = ["bench-durable-proxy", "bench-monitor"] as const;

/** The processes whose CPU the floor counts. */
function floorProcessKinds(monitor: pg.Client, proxyPid: number): ProcessKindPids {
  return {
    proxy: async () => [proxyPid],
    "postgres backends": () => backendPidsOf(monitor, { only: ["bench-durable-proxy"] }),
    "postgres background": () => postgresBackgroundPids(monitor),
  };
}

/**
 * The processes whose CPU the gateway counts: its backends by application name (the gateway's pool, the
 * worker's, the projection runner's…), so the breakdown says whose statements the server's CPU went to.
 */
async function gatewayProcessKinds(
  monitor: pg.Client,
  running: RunningDeployment,
  redis: Redis | undefined,
): Promise<ProcessKindPids> {
  const { gateway, worker } = running.pids;
  return {
    gateway: async () => [gateway],
    worker: async () => (worker === undefined ? [] : [worker]),
    ...(await backendKindsByApplication(monitor, "postgres backends", benchApplications)),
    "postgres background": () => postgresBackgroundPids(monitor),
    ...(redis ? { redis: () => redisServerPid(() => redis.info("server")) } : {}),
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

/** Keys each on an account of its own, and as many on one shared account. */
async function provisionManyKeys(
  origin: string,
  monitor: pg.Client,
): Promise<{ spread: readonly string[]; shared: readonly string[] }> {
  const spread = await provisionKeys(manyKeys, (index) =>
    provisionKey(origin, monitor, `bench-spread-${index}`),
  );
  const sharedUser = "bench-shared";
  const shared = [await provisionKey(origin, monitor, sharedUser)];
  shared.push(...(await provisionKeys(manyKeys - 1, () => provisionAnotherKey(origin, sharedUser))));
  return { spread, shared };
}

/**
 * Throughput at 32 connections with many keys, each request on the next key: over as many accounts, and all
 * on one account; beside the one hot key. Taken in the order A B C C B A and averaged per kind, so the
 * machine's drift and what one run leaves to the next (vacuum, a backlog) weigh on each alike.
 */
async function keyScaleFigures(
  monitor: pg.Client,
  hotKey: string,
  keys: { spread: readonly string[]; shared: readonly string[] },
  gatewayLoad: (setting: Setting, keys?: readonly string[]) => Promise<LoadResult>,
): Promise<Figure[]> {
  const setting = { label: "32 connections", connections: loadedConnections, requests: loadedRequests };
  const throughput = async (rotated: readonly string[]) => {
    await untilEverythingCharged(monitor);
    // Each key's first request reads it into the gateway's cache: warm them all before measuring.
    await gatewayLoad({ label: "warm", connections: 8, requests: rotated.length }, rotated);
    await untilEverythingCharged(monitor);
    return (await gatewayLoad(setting, rotated)).requestsPerSecond;
  };
  const order = [[hotKey], keys.spread, keys.shared, keys.shared, keys.spread, [hotKey]] as const;
  const runs: number[] = [];
  for (const rotated of order) runs.push(await throughput(rotated));
  const [oneKey, spread, shared] = [0, 1, 2].map((index) => (runs[index]! + runs[5 - index]!) / 2) as [
    number,
    number,
    number,
  ];
  const each = (first: number, second: number) => `${Math.round(runs[first]!)}, ${Math.round(runs[second]!)}`;
  return [
    {
      name: `gateway req/s, JSON, 32 connections, ${manyKeys} keys over ${manyKeys} accounts (runs: ${each(1, 4)})`,
      value: spread,
      unit: "req/s",
      baseline: oneKey,
      baselineName: `one key (runs: ${each(0, 5)})`,
      target: "≥ 0.9× baseline (issue 26)",
    },
    {
      name: `gateway req/s, JSON, 32 connections, ${manyKeys} keys on one account (runs: ${each(2, 3)})`,
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

/** The CPU of every PostgreSQL backend, whatever application it served. */
function backendsCpuOf(cost: RequestCost): number {
  return Object.entries(cost.cpuUsPerRequest)
    .filter(([kind]) => kind.startsWith("postgres backends"))
    .reduce((sum, [, us]) => sum + us, 0);
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
    "CPU µs: postgres backends, all": {
      gateway: fixed(backendsCpuOf(cost)),
      floor: fixed(backendsCpuOf(floor)),
    },
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
