import { existsSync } from "node:fs";
import path from "node:path";
import Redis from "ioredis";
import pg from "pg";
import { removeDeploymentQueueData, removeQueueData } from "../src/billing/queue/remove-queue-data";
import { type BenchDatabase, createBenchDatabase } from "./bench-database";
import {
  assertHealthy,
  chatBody,
  gatewayEnvironment,
  provisionKey,
  untilEverythingCharged,
} from "./gateway-deployment";
import { type LoadResult, runLoad } from "./load-generator";
import { backendPidsOf, cpuDuring, type ProcessKinds } from "./process-cpu";
import { startChild } from "./processes/child-process";
import { hasStatementStatistics, postgresBackgroundPids, redisServerPid } from "./request-cost";
import { warmUp } from "./warm-up";

/**
 * `npm run bench:compare -- <checkout>`: this checkout's request path beside another build's (a git worktree
 * of another commit, its dependencies installed), in alternating rounds on one machine, so that the machine's
 * drift — up to 2× between sessions, 30% between runs — weighs on both alike. A change of a tenth shows only
 * this way.
 *
 * Each build runs as deployed for scale-out, a gateway and a worker started from its own checkout's
 * `src/main.ts`, on a database of its own (and its own Redis prefix, named after its ledger), both served by one
 * simulator with zero latency. Rounds go in `COMPARE_ROUNDS` order (A: this checkout, B: the other; default
 * A B B A A B B A). Before a round the last one's charges are awaited and both databases' holds table is
 * vacuumed, so no round pays for the dead rows another left (autovacuum visits a database once a minute);
 * then `COMPARE_REQUESTS` JSON requests at 32 connections give throughput and CPU per request by kind of
 * process (the gateway, the worker, the build's database backends, PostgreSQL's background processes, Redis),
 * read from /proc once every charge is posted; then 1,000 at one connection give the p50. Prints every round,
 * the means with B's ratio to A, and — with `pg_stat_statements` loaded — each database's statements by
 * execution time per request. `COMPARE_NODE_OPTIONS_B` (or `_A`) gives one build's processes Node flags:
 * the same checkout twice then compares a runtime setting.
 */

const connections = 32;
const lightRequests = 1_000;
const order = (process.env.COMPARE_ROUNDS ?? "ABBAABBA").split("");
const requestsPerRound = Number(process.env.COMPARE_REQUESTS ?? 6_000);

interface Build {
  name: "A" | "B";
  checkout: string;
}

interface DeployedBuild extends Build {
  database: BenchDatabase;
  monitor: pg.Client;
  origin: string;
  key: string;
  kinds: ProcessKinds<string>;
  stop(): Promise<void>;
}

interface Round {
  build: "A" | "B";
  loaded: LoadResult;
  cpuUsPerRequest: Record<string, number>;
  p50Ms: number;
}

async function main(): Promise<void> {
  const other = process.argv[2];
  if (!other || !existsSync(path.join(other, "src/main.ts")))
    throw new Error(
      "usage: npm run bench:compare -- <checkout of another build, its dependencies installed>",
    );
  if (
    order.some((letter) => letter !== "A" && letter !== "B") ||
    !order.includes("A") ||
    !order.includes("B")
  )
    throw new Error(`COMPARE_ROUNDS takes rounds of both A and B, such as ABBA, not ${order.join("")}`);
  if (!Number.isInteger(requestsPerRound) || requestsPerRound < 1)
    throw new Error(`COMPARE_REQUESTS is a whole number of requests, not ${process.env.COMPARE_REQUESTS}`);
  const builds: Build[] = [
    { name: "A", checkout: process.cwd() },
    { name: "B", checkout: path.resolve(other) },
  ];
  const redisUrl = process.env.REDIS_URL;
  const redis = redisUrl ? new Redis(redisUrl, { lazyConnect: true }) : undefined;
  const simulator = await startChild("bench/processes/simulator-process.ts", [], process.env, /^http:/);
  const deployed: DeployedBuild[] = [];
  try {
    for (const build of builds) deployed.push(await deploy(build, simulator.line.trim(), redisUrl, redis));
    // The extension's view is per database; its counters are the server's.
    const withStatements = (
      await Promise.all(deployed.map((build) => hasStatementStatistics(build.monitor)))
    ).every(Boolean);
    for (const build of deployed) {
      // Every path warm (compiled code, pools, prepared statements), as the bench's sections warm theirs: at
      // the rounds' connections, so that no round opens connections (and prepares statements on them) the
      // others reuse.
      await load(build, warmUp.connections, warmUp.requests);
      await load(build, 1, 300);
      await untilEverythingCharged(build.monitor);
    }
    if (withStatements) await deployed[0]!.monitor.query("SELECT pg_stat_statements_reset()");
    const rounds: Round[] = [];
    for (const letter of order) {
      const build = deployed.find((candidate) => candidate.name === letter)!;
      for (const each of deployed) {
        await untilEverythingCharged(each.monitor);
        await each.monitor.query("VACUUM request_holds");
      }
      const { result: loaded, cpuMs } = await cpuDuring(build.kinds, async () => {
        const result = await load(build, connections, requestsPerRound);
        await untilEverythingCharged(build.monitor);
        return result;
      });
      const light = await load(build, 1, lightRequests);
      const round: Round = {
        build: build.name,
        loaded,
        cpuUsPerRequest: Object.fromEntries(
          Object.entries(cpuMs).map(([kind, ms]) => [kind, (ms * 1_000) / loaded.requests]),
        ),
        p50Ms: light.p50Ms,
      };
      rounds.push(round);
      console.log(describe(round));
    }
    console.table(summary(rounds));
    if (withStatements) for (const build of deployed) await printStatements(build, rounds);
  } finally {
    for (const build of deployed) await build.stop();
    await simulator.stop();
    redis?.disconnect();
  }
}

async function deploy(
  build: Build,
  simulatorUrl: string,
  redisUrl: string | undefined,
  redis: Redis | undefined,
): Promise<DeployedBuild> {
  const database = await createBenchDatabase();
  // What has started, stopped in reverse should a later step fail: no process or database is left behind.
  const started: (() => Promise<void>)[] = [
    () => database.drop(),
    async () => {
      await removeDeploymentQueueData({ redisUrl, databaseUrl: database.url });
      // A build from before the ledger had an id named its keys after the database.
      if (redisUrl !== undefined)
        await removeQueueData({
          kind: "redis",
          redisUrl,
          prefix: `won-gateway:${new URL(database.url).pathname.slice(1)}`,
        });
    },
  ];
  const stop = async () => {
    for (const stopOne of [...started].reverse()) await stopOne();
  };
  try {
    const environment = {
      ...gatewayEnvironment(database.url, () => simulatorUrl, redisUrl),
      PORT: "0",
      ...nodeOptionsOf(build),
    };
    const main = path.join(build.checkout, "src/main.ts");
    const worker = await startChild(main, ["--role=worker"], environment, /worker running/);
    started.push(() => worker.stop());
    const gateway = await startChild(main, ["--role=gateway"], environment, /gateway listening/);
    started.push(() => gateway.stop());
    const monitor = new pg.Client({ connectionString: database.url, application_name: "bench-monitor" });
    await monitor.connect();
    started.push(() => monitor.end());
    const origin = new URL((JSON.parse(gateway.line) as { baseUrl: string }).baseUrl).origin;
    const key = await provisionKey(origin, monitor);
    const kinds: ProcessKinds<string> = {
      gateway: async () => [gateway.child.pid!],
      worker: async () => [worker.child.pid!],
      "PostgreSQL backends": () => backendPidsOf(monitor, { except: ["bench-monitor"] }),
      "PostgreSQL background": () => postgresBackgroundPids(monitor),
      ...(redis ? { Redis: () => redisServerPid(() => redis.info("server")) } : {}),
    };
    return { ...build, database, monitor, origin, key, kinds, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** A load whose every request was answered 200: a failed one would make the per-request figures lie. */
async function load(build: DeployedBuild, connectionCount: number, requests: number): Promise<LoadResult> {
  const result = await runLoad({
    origin: build.origin,
    path: "/llm/v1/chat/completions",
    headers: { authorization: `Bearer ${build.key}` },
    body: chatBody(false),
    connections: connectionCount,
    requestsMax: requests,
    durationMsMax: 300_000,
  });
  assertHealthy(result, `${build.name}, ${connectionCount} connection(s)`);
  return result;
}

function totalOf(cpu: Record<string, number>): number {
  return Object.values(cpu).reduce((sum, value) => sum + value, 0);
}

function describe(round: Round): string {
  const cpu = Object.entries(round.cpuUsPerRequest)
    .map(([kind, us]) => `${kind} ${us.toFixed(0)}`)
    .join(", ");
  return (
    `${round.build}: ${round.loaded.requestsPerSecond.toFixed(0)} req/s; ` +
    `CPU µs per request: ${cpu}; whole box ${totalOf(round.cpuUsPerRequest).toFixed(0)}; ` +
    `p50 at 1 connection ${round.p50Ms.toFixed(2)} ms`
  );
}

/** The means of each build's rounds, and B's ratio to A. */
function summary(rounds: readonly Round[]): Record<string, Record<string, string>> {
  const mean = (build: "A" | "B", of: (round: Round) => number) => {
    const values = rounds.filter((round) => round.build === build).map(of);
    return values.reduce((sum, value) => sum + value, 0) / values.length;
  };
  const kinds = [...new Set(rounds.flatMap((round) => Object.keys(round.cpuUsPerRequest)))];
  const figures: [string, (round: Round) => number][] = [
    ["throughput, 32 conn. (req/s)", (round) => round.loaded.requestsPerSecond],
    ["CPU µs per request, whole box", (round) => totalOf(round.cpuUsPerRequest)],
    ...kinds.map((kind): [string, (round: Round) => number] => [
      `CPU µs per request, ${kind}`,
      (round) => round.cpuUsPerRequest[kind] ?? 0,
    ]),
    ["p50, 1 conn. (ms)", (round) => round.p50Ms],
  ];
  return Object.fromEntries(
    figures.map(([name, of]) => {
      const a = mean("A", of);
      const b = mean("B", of);
      return [
        name,
        { A: a.toFixed(a < 10 ? 2 : 0), B: b.toFixed(b < 10 ? 2 : 0), "B / A": (b / a).toFixed(3) },
      ];
    }),
  );
}

/** The build's database's statements by execution time, per request of its measured rounds. */
async function printStatements(build: DeployedBuild, rounds: readonly Round[]): Promise<void> {
  const requests = rounds
    .filter((round) => round.build === build.name)
    .reduce((sum, round) => sum + round.loaded.requests + lightRequests, 0);
  const top = await build.monitor.query<{ calls: string; total_ms: number; rows: string; query: string }>(
    `SELECT calls, total_exec_time AS total_ms, rows, left(regexp_replace(query, '[[:space:]]+', ' ', 'g'), 100) AS query
     FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
     ORDER BY total_exec_time DESC LIMIT 10`,
  );
  console.log(`${build.name} (${build.checkout}): statements by execution time, over ${requests} requests`);
  console.table(
    top.rows.map((row) => ({
      "µs per request": ((row.total_ms * 1_000) / requests).toFixed(0),
      calls: row.calls,
      rows: row.rows,
      statement: row.query,
    })),
  );
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);

/** `COMPARE_NODE_OPTIONS_B` (or `_A`): Node's flags for one build's processes, to compare runtime settings. */
function nodeOptionsOf(build: Build): { NODE_OPTIONS?: string } {
  const options = process.env[`COMPARE_NODE_OPTIONS_${build.name}`];
  return options === undefined ? {} : { NODE_OPTIONS: options };
}
