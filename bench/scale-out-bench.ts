import { readFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import { removeDeploymentQueueData } from "../src/billing/queue/remove-queue-data";
import { createBenchDatabase } from "./bench-database";
import {
  assertHealthy,
  chargeLagMs,
  chatBody,
  gatewayEnvironment,
  provisionKey,
  type RunningDeployment,
  startAnotherGateway,
  startDeployment,
  untilEverythingCharged,
} from "./gateway-deployment";
import { type LoadResult, runLoad } from "./load-generator";
import { type Figure, percentile } from "./measure";
import { memoryFloors } from "./memory-floors";
import { backendPidsOf } from "./process-cpu";
import { startChild } from "./processes/child-process";
import {
  costPerRequest,
  hasStatementStatistics,
  type ProcessKindPids,
  postgresBackgroundPids,
  type RequestCost,
  readCostCounters,
  readCpu,
} from "./request-cost";
import { warmUp } from "./warm-up";

/**
 * Scale-out and endurance, each beside a baseline from the same run (`BENCH_ONLY=scale`):
 *
 * - **Two gateway processes on one PostgreSQL** against one: throughput at 32 connections, split evenly
 *   between the two, in rounds one, two, two, one (the machine's drift weighs on both alike).
 * - **A soak**: `BENCH_SOAK_SECONDS` (600 by default) at 32 connections through the gateway as deployed for
 *   scale-out. Sampled as it runs: how far the slowest projection trails the log (the age of the oldest event
 *   it has not applied, every 500 ms) and each process's resident memory (every 5 s). Then, once the backlog is
 *   charged: the charge lag of the soak's usage, and that every request answered was recorded once and
 *   charged once (its own account, so nothing else counts).
 */

const connections = 32;
const roundSeconds = 15;
/** A warm-up's bound in time, should the machine be slow enough that its requests take longer. */
const warmUpSecondsMax = 60;
const soakSeconds = Number(process.env.BENCH_SOAK_SECONDS ?? 600);
const lagSampleMs = 500;
const memorySampleMs = 5_000;
/** The windows memory is judged in (memory-floors.ts): two minutes, longer than the slowest GC cycle. */
const memoryWindows = { samplesPerMinute: 60_000 / memorySampleMs, windowMinutes: 2 };
/** An idle backend reports its statistics within 10 s. */
const statisticsFlushMs = 11_000;

export async function runScaleOutBenchmarks(options: { redisUrl?: string }): Promise<Figure[]> {
  const database = await createBenchDatabase();
  const monitor = new pg.Client({ connectionString: database.url, application_name: "bench-monitor" });
  await monitor.connect();
  const stops: (() => Promise<void>)[] = [];
  try {
    const simulator = await startChild("bench/processes/simulator-process.ts", [], process.env, /^http:/);
    stops.push(() => simulator.stop());
    const environment = gatewayEnvironment(database.url, () => simulator.line.trim(), options.redisUrl);
    const deployment = await startDeployment("scale-out", environment);
    stops.push(() => deployment.stop());
    const second = await startAnotherGateway(environment);
    stops.push(() => second.stop());

    const key = await provisionKey(deployment.origin, monitor);
    const load = (
      origin: string,
      connectionCount: number,
      seconds: number,
      bearer = key,
      requestsMax = Number.MAX_SAFE_INTEGER,
    ) =>
      runLoad({
        origin,
        path: "/llm/v1/chat/completions",
        headers: { authorization: `Bearer ${bearer}` },
        body: chatBody(false),
        connections: connectionCount,
        requestsMax,
        durationMsMax: seconds * 1_000,
      });
    for (const origin of [deployment.origin, second.origin])
      await load(origin, warmUp.connections, warmUpSecondsMax, key, warmUp.requests);

    // Each round counted on the server as the cost section counts a request (statements, commits, CPU of
    // every process), so a difference in throughput shows where it comes from.
    const withStatements = await hasStatementStatistics(monitor);
    const kinds: ProcessKindPids = {
      gateways: async () => [deployment.pids.gateway, second.pid],
      worker: async () => [deployment.pids.worker!],
      "postgres backends": () => backendPidsOf(monitor, { except: ["bench-monitor"] }),
      "postgres background": () => postgresBackgroundPids(monitor),
    };
    const throughput = { one: [] as number[], two: [] as number[] };
    const costs = { one: [] as RequestCost[], two: [] as RequestCost[] };
    for (const kind of ["one", "two", "two", "one"] as const) {
      await untilEverythingCharged(monitor);
      await sleep(statisticsFlushMs);
      const before = { counters: await readCostCounters(monitor, withStatements), cpu: await readCpu(kinds) };
      const results =
        kind === "one"
          ? [await load(deployment.origin, connections, roundSeconds)]
          : await Promise.all([
              load(deployment.origin, connections / 2, roundSeconds),
              load(second.origin, connections / 2, roundSeconds),
            ]);
      for (const result of results) assertHealthy(result, `${kind} gateway round`);
      const requests = results.reduce((sum, result) => sum + result.requests, 0);
      throughput[kind].push(requests / Math.max(...results.map((result) => result.seconds)));
      await untilEverythingCharged(monitor);
      const cpu = await readCpu(kinds);
      await sleep(statisticsFlushMs);
      const after = { counters: await readCostCounters(monitor, withStatements), cpu };
      costs[kind].push(costPerRequest(before, after, requests));
    }
    const mean = (values: readonly number[]) => values.reduce((sum, value) => sum + value, 0) / values.length;
    const runs = (values: readonly number[]) => values.map((value) => Math.round(value)).join(", ");
    const figures: Figure[] = [
      {
        name: `gateway req/s, JSON, ${connections} connections, two gateway processes on one PostgreSQL (runs: ${runs(throughput.two)})`,
        value: mean(throughput.two),
        unit: "req/s",
        baseline: mean(throughput.one),
        baselineName: `one gateway process (runs: ${runs(throughput.one)})`,
        target: "≥ 1.0×",
      },
      ...perRequestFigures(costs),
    ];
    await second.stop();
    figures.push(
      ...(await soakFigures(
        monitor,
        deployment,
        (bearer) => load(deployment.origin, connections, soakSeconds, bearer),
        mean(throughput.one),
      )),
    );
    return figures;
  } finally {
    for (const stop of stops.reverse()) await stop();
    await monitor.end();
    await removeDeploymentQueueData({ redisUrl: options.redisUrl, databaseUrl: database.url });
    await database.drop();
  }
}

/** Per request, two gateway processes against one (each the mean of its rounds). */
function perRequestFigures(costs: Record<"one" | "two", RequestCost[]>): Figure[] {
  const mean = (kind: "one" | "two", of: (cost: RequestCost) => number) =>
    costs[kind].reduce((sum, cost) => sum + of(cost), 0) / costs[kind].length;
  const wholeBox = (cost: RequestCost) =>
    Object.values(cost.cpuUsPerRequest).reduce((sum, microseconds) => sum + microseconds, 0);
  const measures: (readonly [string, string, (cost: RequestCost) => number])[] = [
    ["CPU, whole box", "µs", wholeBox],
    ["transactions", "commits", (cost) => cost.transactionsPerRequest],
    ...(costs.one[0]?.statementsPerRequest === undefined
      ? []
      : [["statements", "statements", (cost: RequestCost) => cost.statementsPerRequest ?? 0] as const]),
  ];
  return measures.map(([what, unit, of]) => ({
    name: `per request, JSON, ${connections} connections, two gateway processes: ${what}`,
    value: mean("two", of),
    unit,
    baseline: mean("one", of),
    baselineName: "one gateway process",
  }));
}

async function soakFigures(
  monitor: pg.Client,
  deployment: RunningDeployment,
  soakLoad: (key: string) => Promise<LoadResult>,
  /** The same process's throughput in the short rounds before it. */
  roundThroughput: number,
): Promise<Figure[]> {
  const soakUser = "bench-soak";
  const key = await provisionKey(deployment.origin, monitor, soakUser);
  await untilEverythingCharged(monitor);
  const processes = { gateway: deployment.pids.gateway, worker: deployment.pids.worker! };
  const lags: number[] = [];
  const memory: { gateway: number[]; worker: number[] } = { gateway: [], worker: [] };
  let running = true;
  const sampleLag = async () => {
    while (running) {
      lags.push(await projectionLagMs(monitor));
      await sleep(lagSampleMs);
    }
  };
  const sampleMemory = async () => {
    while (running) {
      memory.gateway.push(residentMegabytesOf(processes.gateway));
      memory.worker.push(residentMegabytesOf(processes.worker));
      await sleep(memorySampleMs);
    }
  };
  const samplers = Promise.all([sampleLag(), sampleMemory()]);
  let result: LoadResult;
  try {
    result = await soakLoad(key);
  } finally {
    running = false;
    await samplers;
  }
  assertHealthy(result, "soak");
  await untilEverythingCharged(monitor);
  const billed = await billedOnce(monitor, soakUser);
  if (
    billed.recorded !== result.requests ||
    billed.charged !== result.requests ||
    billed.streamsChargedTwice > 0
  )
    throw new Error(
      `soak: ${result.requests} requests answered, ${billed.recorded} recorded, ${billed.charged} charged, ` +
        `${billed.streamsChargedTwice} charged twice`,
    );
  const chargeLag = await chargeLagMs(monitor, { account: { kind: "user", id: soakUser } });
  const sortedLags = [...lags].sort((left, right) => left - right);
  const floors = {
    gateway: memoryFloors(memory.gateway, memoryWindows),
    worker: memoryFloors(memory.worker, memoryWindows),
  };
  const minutes = (result.seconds / 60).toFixed(1);
  return [
    {
      name: `soak, ${minutes} min at ${connections} connections: requests answered, recorded once and charged once`,
      value: billed.charged,
      unit: "charges",
      baseline: result.requests,
      baselineName: "requests answered 200",
      // Fewer or more would already have stopped the soak with the counts (billedOnce).
      target: "≥ 1.0×",
    },
    {
      name: `soak, ${minutes} min: projection lag p99 (oldest event the slowest projection has not applied, every ${lagSampleMs} ms)`,
      value: percentile(sortedLags, 0.99),
      unit: "ms",
      baseline: percentile(sortedLags, 0.5),
      baselineName: "its p50",
      target: "≤ 2,000 ms",
    },
    {
      name: `soak, ${minutes} min: charge lag p99 (recorded → charged)`,
      value: chargeLag.p99,
      unit: "ms",
      baseline: chargeLag.p50,
      baselineName: "its p50",
      target: "≤ 2,000 ms",
    },
    ...(["gateway", "worker"] as const).map((kind) => ({
      name: `soak, ${minutes} min: ${kind} resident memory, lowest of the last ${memoryWindows.windowMinutes} minutes (every ${memorySampleMs / 1_000} s: ${memory[kind].map((value) => Math.round(value)).join(" ")})`,
      value: floors[kind].last,
      unit: "MB",
      baseline: floors[kind].warm,
      baselineName: `lowest of minutes 2 to ${1 + memoryWindows.windowMinutes}`,
      // Flat: within a tenth of what it held once warm.
      target: "≤ 1.1×",
    })),
    {
      name: `soak, ${minutes} min: throughput, sustained`,
      value: result.requestsPerSecond,
      unit: "req/s",
      baseline: roundThroughput,
      baselineName: `one gateway process in ${roundSeconds} s rounds`,
    },
  ];
}

/** How long ago the oldest event the slowest projection has not applied was appended (0: none). */
async function projectionLagMs(monitor: pg.Client): Promise<number> {
  const result = await monitor.query<{ lag_ms: number }>(
    `WITH lowest AS (
       SELECT commit_position, prepare_position FROM projection_checkpoints
       ORDER BY commit_position, prepare_position LIMIT 1
     )
     SELECT coalesce(extract(epoch FROM clock_timestamp() - min(events.recorded_at)) * 1000, 0)::float8 AS lag_ms
     FROM ledger_events events, lowest
     WHERE (events.transaction_order, events.position) > (lowest.commit_position, lowest.prepare_position)`,
  );
  return result.rows[0]!.lag_ms;
}

async function billedOnce(
  monitor: pg.Client,
  userId: string,
): Promise<{ recorded: number; charged: number; streamsChargedTwice: number }> {
  const result = await monitor.query<{ recorded: number; charged: number; twice: number }>(
    `WITH usage_events AS (
       SELECT stream_id, type FROM ledger_events
       WHERE type IN ('UsageRecorded', 'UsageCharged') AND data->'account'->>'kind' = 'user'
         AND data->'account'->>'id' = $1
     )
     SELECT count(*) FILTER (WHERE type = 'UsageRecorded')::int AS recorded,
            count(*) FILTER (WHERE type = 'UsageCharged')::int AS charged,
            (SELECT count(*) FROM (SELECT stream_id FROM usage_events WHERE type = 'UsageCharged'
                                   GROUP BY stream_id HAVING count(*) > 1) twice)::int AS twice
     FROM usage_events`,
    [userId],
  );
  const row = result.rows[0]!;
  return { recorded: row.recorded, charged: row.charged, streamsChargedTwice: row.twice };
}

/** A process's resident set, in MB, from /proc (Linux); 0 once it is gone. */
function residentMegabytesOf(pid: number): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const kilobytes = /VmRSS:\s+(\d+) kB/.exec(status)?.[1];
    return kilobytes ? Number(kilobytes) / 1_024 : 0;
  } catch {
    return 0;
  }
}
