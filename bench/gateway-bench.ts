import { Redis } from "ioredis";
import pg from "pg";
import { removeDeploymentQueueData } from "../src/billing/queue/remove-queue-data";
import { createBenchDatabase } from "./bench-database";
import {
  assertHealthy,
  chargeLagMs,
  chatBody,
  costlyPrompt,
  fastModel,
  gatewayEnvironment,
  provisionKey,
  type RunningDeployment,
  slowFamily,
  slowModel,
  startDeployment,
  untilEverythingCharged,
} from "./gateway-deployment";
import { type LoadResult, runLoad } from "./load-generator";
import { type Figure, percentile } from "./measure";
import { type Peer, type PeerComparison, peerFigures } from "./peer-comparison";
import { assertPortkeyProxies, portkeyChatPath, portkeyHeaders, startPortkey } from "./portkey-peer";
import { backendPidsOf, cpuDuring, type ProcessKinds } from "./process-cpu";
import { startChild } from "./processes/child-process";
import { postgresBackgroundPids, redisServerPid } from "./request-cost";
import { warmUp } from "./warm-up";

/**
 * Gateway benchmark (C9, C10): the gateway against the same simulator called directly, in one run. Every
 * gateway request is authenticated, held for (C10), recorded in the ledger and charged by the worker.
 *
 * Measured as deployed for scale-out (`start:gateway` + `start:worker`, one process each: the edge serves,
 * the worker runs the projections and the reconciler), then throughput again as one `npm start` process.
 * Beside the gateway, in the same run: the simulator called directly, and a bare proxy in front of it
 * (forward and answer, or pipe a stream through), the floor under any gateway; beside the JSON latency, that
 * proxy committing one row first. Then the same latencies with an upstream that answers after 5 ms (a second
 * simulator, behind the gateway's `epsilon` family and behind a second bare proxy), where the hold is placed
 * while the upstream call is in flight; throughput on one hot account beside 32 accounts; and an account
 * credited with a few won hammered until refused, its final balance beside the C10 bound.
 *
 * Beside the peer, Portkey OSS run as its users deploy it (bench/portkey-peer.ts), in rounds shared with the
 * bare proxy, the floor and the gateway (bench/peer-comparison.ts): throughput and whole-box CPU per request
 * at 32 connections, added latency and a stream's time to first byte at one.
 */

const throughputConnections = 32;
const requestsMax = 20_000;
const durationMsMax = 10_000;
const latencyRequests = 1_000;
/** Fewer at 5 ms each: the upstream's wait dominates, and 500 samples settle the p50. */
const slowLatencyRequests = 500;
/** …taken in this many turns per endpoint. */
const slowLatencyRounds = 5;
const slowUpstreamLatencyMs = 5;
/** A sustained one-connection load: its last turn's p50 beside its first's. */
const sustainedTurns = 6;
const sustainedTurnRequests = 1_500;
/** Accounts (one key each) the keys are rotated over, beside one hot account. */
const spreadAccounts = 32;
const overdraftConnections = 64;
const overdraftCreditWon = "50";

/** Endpoints measured beside the gateway: the simulators themselves, and bare proxies in front of them. */
const references = [
  "direct",
  "bare proxy",
  "bare proxy + commit",
  "bare proxy, pass-through",
  "direct, 5 ms upstream",
  "bare proxy, 5 ms upstream",
  "bare proxy + commit, 5 ms upstream",
  "Portkey OSS",
] as const;
type Reference = (typeof references)[number];

interface LoadPlan {
  stream?: boolean;
  connections: number;
  requests: number;
  /** Through the 5 ms upstream (the gateway's `epsilon` family). */
  slow?: boolean;
  /** Gateway keys, rotated per request; the hot bench key by default. */
  keys?: readonly string[];
}

/** What every phase of the section uses: the endpoints, the gateway as deployed, and loads against them. */
interface GatewayBench {
  monitor: pg.Client;
  databaseUrl: string;
  environment: NodeJS.ProcessEnv;
  running: RunningDeployment;
  floorProxyPid: number;
  portkeyPid: number;
  /** The queue's Redis, when the gateway runs on one: part of the gateway's whole box. */
  redis: Redis | undefined;
  apiKey: string;
  spreadKeys: readonly string[];
  /** When the gateway ran loaded and lightly: the charge lag is read over these windows. */
  windows: Record<"loaded" | "light", { from: Date; to: Date }[]>;
  /** A load against a reference endpoint by name, or a gateway's origin. */
  load(target: Reference | string, plan: LoadPlan): Promise<LoadResult>;
  /** The same, failing the benchmark on any failed request. */
  healthy(label: string, target: Reference | string, plan: LoadPlan): Promise<LoadResult>;
  during<T>(window: "loaded" | "light", work: () => Promise<T>): Promise<T>;
}

const loaded = { connections: throughputConnections, requests: requestsMax };
const light = { connections: 1, requests: latencyRequests };

export async function runGatewayBenchmarks(options: { redisUrl?: string }): Promise<Figure[]> {
  const database = await createBenchDatabase();
  // One connection for the whole section, held from the start: on a shared server near its connection limit
  // a fresh connection per wait could be refused mid-run.
  const monitor = new pg.Client({ connectionString: database.url });
  await monitor.connect();
  const children: { stop(): Promise<void> }[] = [];
  let bench: GatewayBench | undefined;
  try {
    bench = await startGatewayBench(database.url, monitor, children, options);
    await warmEveryPath(bench);
    const figures: Figure[] = [];
    figures.push(
      ...(await cpuPerRequestFigures({
        monitor,
        deployment: bench.running,
        floorProxyPid: bench.floorProxyPid,
        floor: () => bench!.healthy("bare proxy + commit JSON", "bare proxy + commit", loaded),
        gateway: () =>
          bench!.during("loaded", () => bench!.healthy("gateway JSON", bench!.running.origin, loaded)),
      })),
    );
    figures.push(...(await peerFigures(peerComparisonOf(bench))));
    for (const stream of [false, true]) {
      figures.push(...(await throughputFigures(bench, stream)));
      figures.push(...(await latencyFigures(bench, stream)));
    }
    figures.push(...(await sustainedLatencyFigures(bench)));
    figures.push(...(await chargeLagFigures(monitor, bench.windows)));
    figures.push(...(await slowUpstreamFigures(bench)));
    await untilEverythingCharged(monitor);
    figures.push(...(await overdraftFigures(bench.running.origin, monitor)));
    figures.push(...(await oneProcessFigures(bench)));
    return figures;
  } finally {
    await bench?.running.stop();
    for (const child of children.reverse()) await child.stop();
    bench?.redis?.disconnect();
    await monitor.end();
    await removeDeploymentQueueData({ redisUrl: options.redisUrl, databaseUrl: database.url });
    await database.drop();
  }
}

/**
 * Starts the references (the simulators, the bare proxies in front of them) and the gateway deployed for
 * scale-out, and provisions the hot key and one key per spread account.
 */
async function startGatewayBench(
  databaseUrl: string,
  monitor: pg.Client,
  children: { stop(): Promise<void> }[],
  options: { redisUrl?: string },
): Promise<GatewayBench> {
  const { simulatorUrl, slowSimulatorUrl, floorProxyUrl, slowProxyUrl, floorProxyPid, portkey } =
    await startReferences(databaseUrl, children);
  const environment = gatewayEnvironment(
    databaseUrl,
    (family) => (family === slowFamily ? slowSimulatorUrl : simulatorUrl),
    options.redisUrl,
  );
  const running = await startDeployment("scale-out", environment);
  const apiKey = await provisionKey(running.origin, monitor);
  const spreadKeys = await Promise.all(
    Array.from({ length: spreadAccounts }, (_, index) =>
      provisionKey(running.origin, monitor, `bench-${index}`),
    ),
  );
  const endpoints: Record<Reference, { origin: string; path: string; headers?: Record<string, string> }> = {
    direct: { origin: simulatorUrl, path: "/chat/completions" },
    "bare proxy": { origin: floorProxyUrl, path: "/without-commit/chat/completions" },
    "bare proxy + commit": { origin: floorProxyUrl, path: "/chat/completions" },
    "bare proxy, pass-through": { origin: floorProxyUrl, path: "/pass-through/chat/completions" },
    "direct, 5 ms upstream": { origin: slowSimulatorUrl, path: "/chat/completions" },
    "bare proxy, 5 ms upstream": { origin: slowProxyUrl, path: "/without-commit/chat/completions" },
    "bare proxy + commit, 5 ms upstream": { origin: slowProxyUrl, path: "/chat/completions" },
    "Portkey OSS": { origin: portkey.url, path: portkeyChatPath, headers: portkeyHeaders(simulatorUrl) },
  };
  const windows: GatewayBench["windows"] = { loaded: [], light: [] };
  // Each run, direct or not, starts with the previous runs' usage charged, so none pays for their backlog.
  const load = async (target: Reference | string, plan: LoadPlan) => {
    await untilEverythingCharged(monitor);
    const reference = endpoints[target as Reference];
    const keys = plan.keys ?? [apiKey];
    return runLoad({
      origin: reference?.origin ?? target,
      path: reference?.path ?? "/llm/v1/chat/completions",
      headers: reference?.headers ?? { authorization: reference ? "Bearer bench" : `Bearer ${keys[0]}` },
      headersFor:
        reference || keys.length === 1
          ? undefined
          : (request) => ({ authorization: `Bearer ${keys[request % keys.length]}` }),
      body: chatBody(plan.stream ?? false, plan.slow ? slowModel : fastModel),
      connections: plan.connections,
      requestsMax: plan.requests,
      durationMsMax,
    });
  };
  return {
    monitor,
    databaseUrl,
    environment,
    running,
    floorProxyPid,
    portkeyPid: portkey.pid,
    redis: options.redisUrl ? new Redis(options.redisUrl, { lazyConnect: true }) : undefined,
    apiKey,
    spreadKeys,
    windows,
    load,
    healthy: async (label, target, plan) => {
      const result = await load(target, plan);
      assertHealthy(result, label);
      return result;
    },
    during: async (window, work) => {
      const from = new Date();
      const result = await work();
      windows[window].push({ from, to: new Date() });
      return result;
    },
  };
}

/** The simulators (zero latency and 5 ms) and a bare proxy in front of each. */
async function startReferences(databaseUrl: string, children: { stop(): Promise<void> }[]) {
  const pidOfUrl = new Map<string, number>();
  const start = async (script: string, environment: NodeJS.ProcessEnv) => {
    const child = await startChild(script, [], environment, /^http:\/\//);
    children.push(child);
    pidOfUrl.set(child.line.trim(), child.child.pid!);
    return child.line.trim();
  };
  const simulator = "bench/processes/simulator-process.ts";
  const simulatorUrl = await start(simulator, { ...process.env, SIMULATOR_LATENCY_MS: "0" });
  const slowSimulatorUrl = await start(simulator, {
    ...process.env,
    SIMULATOR_LATENCY_MS: String(slowUpstreamLatencyMs),
  });
  // One after the other: each creates its table if missing.
  const proxy = "bench/processes/durable-proxy-process.ts";
  const floorProxyUrl = await start(proxy, {
    ...process.env,
    UPSTREAM_URL: simulatorUrl,
    DATABASE_URL: databaseUrl,
  });
  const slowProxyUrl = await start(proxy, {
    ...process.env,
    UPSTREAM_URL: slowSimulatorUrl,
    DATABASE_URL: databaseUrl,
  });
  const portkey = await startPortkey();
  children.push(portkey);
  await assertPortkeyProxies(portkey.url, simulatorUrl);
  return {
    portkey,
    simulatorUrl,
    slowSimulatorUrl,
    floorProxyUrl,
    slowProxyUrl,
    floorProxyPid: pidOfUrl.get(floorProxyUrl)!,
  };
}

/** The other paths' warm-up: each shares most of its code with the JSON path, warmed whole first. */
const warm = { connections: 8, requests: 500 };

/**
 * Warms every path (compiled code, connection pools, prepared statements) before measuring: each endpoint's
 * JSON path as warm-up.ts says, then its others (the rotated keys, streams, the slow upstream).
 */
async function warmEveryPath(bench: GatewayBench): Promise<void> {
  const gatewayOrigin = bench.running.origin;
  await bench.load(gatewayOrigin, warmUp);
  await bench.load(gatewayOrigin, { ...warm, keys: bench.spreadKeys });
  await bench.load(gatewayOrigin, { ...warm, stream: true });
  await bench.load(gatewayOrigin, { ...warm, slow: true, requests: 200 });
  for (const reference of references) {
    if (reference.endsWith("5 ms upstream"))
      await bench.load(reference, { ...warm, slow: true, requests: 200 });
    else if (reference === "bare proxy, pass-through") await bench.load(reference, { ...warm, stream: true });
    else await bench.load(reference, warmUp);
  }
  await bench.load("Portkey OSS", { ...warm, stream: true });
}

/** The section's endpoints as the peer comparison names them, each with the processes of its whole box. */
function peerComparisonOf(bench: GatewayBench): PeerComparison {
  const referenceOf = (peer: Peer, stream: boolean): Reference | string => {
    if (peer === "bare proxy") return bareProxyOf(stream).reference;
    if (peer === "floor") return "bare proxy + commit";
    if (peer === "Portkey") return "Portkey OSS";
    return bench.running.origin;
  };
  const floorBackends = ["bench-durable-proxy"];
  const processes: Record<Peer, ProcessKinds<string>> = {
    "bare proxy": { proxy: async () => [bench.floorProxyPid] },
    floor: {
      proxy: async () => [bench.floorProxyPid],
      "postgres backends": () => backendPidsOf(bench.monitor, { only: floorBackends }),
      "postgres background": () => postgresBackgroundPids(bench.monitor),
    },
    Portkey: { portkey: async () => [bench.portkeyPid] },
    gateway: {
      gateway: async () => [bench.running.pids.gateway],
      worker: async () => (bench.running.pids.worker === undefined ? [] : [bench.running.pids.worker]),
      "postgres backends": () => backendPidsOf(bench.monitor, { except: floorBackends }),
      "postgres background": () => postgresBackgroundPids(bench.monitor),
      redis: async () => (bench.redis ? redisServerPid(() => bench.redis!.info("server")) : []),
    },
  };
  return {
    load: (endpoint, plan) =>
      bench.healthy(
        `${endpoint} (peer rounds)`,
        endpoint === "direct" ? "direct" : referenceOf(endpoint, plan.stream),
        plan,
      ),
    processes: (peer) => processes[peer],
    settled: () => untilEverythingCharged(bench.monitor),
  };
}

/** Requests/s at 32 connections through `origin`, beside the simulator called directly. */
async function throughputOf(bench: GatewayBench, origin: string, stream: boolean, suffix: string) {
  const mode = stream ? "streaming" : "JSON";
  const direct = await bench.load("direct", { ...loaded, stream });
  const viaGateway = await bench.during("loaded", () =>
    bench.healthy(`gateway ${mode}${suffix}`, origin, { ...loaded, stream }),
  );
  const figure: Figure = {
    name: `gateway req/s, ${mode}, 32 connections${suffix}`,
    value: viaGateway.requestsPerSecond,
    unit: "req/s",
    baseline: direct.requestsPerSecond,
    baselineName: "simulator called directly",
    target: "≥ 3,000 req/s",
  };
  return { figure, viaGateway };
}

/** The bare proxy that answers as a mode needs: JSON read whole, a stream piped as it arrives. */
function bareProxyOf(stream: boolean): { reference: Reference; name: string } {
  return stream
    ? { reference: "bare proxy, pass-through", name: "bare proxy piping the stream" }
    : { reference: "bare proxy", name: "bare proxy" };
}

/** Throughput beside the simulator and the bare proxy; for JSON, one hot account beside many. */
async function throughputFigures(bench: GatewayBench, stream: boolean): Promise<Figure[]> {
  const mode = stream ? "streaming" : "JSON";
  const bareProxy = bareProxyOf(stream);
  const bareThroughput = await bench.healthy(`${bareProxy.reference} ${mode}`, bareProxy.reference, {
    ...loaded,
    stream,
  });
  const { figure, viaGateway } = await throughputOf(bench, bench.running.origin, stream, "");
  const figures: Figure[] = [
    figure,
    {
      name: `gateway req/s, ${mode}, 32 connections, beside a bare proxy`,
      value: viaGateway.requestsPerSecond,
      unit: "req/s",
      baseline: bareThroughput.requestsPerSecond,
      baselineName: `${bareProxy.name}, same upstream`,
      target: "≥ 0.5× baseline",
    },
  ];
  if (!stream) {
    // Right after the hot account's run: the same load, its keys rotated over many accounts.
    const spread = await bench.healthy("gateway JSON, many accounts", bench.running.origin, {
      ...loaded,
      keys: bench.spreadKeys,
    });
    figures.push({
      name: "gateway req/s, JSON, 32 connections, one hot account",
      value: viaGateway.requestsPerSecond,
      unit: "req/s",
      baseline: spread.requestsPerSecond,
      baselineName: `${spreadAccounts} accounts, key rotated per request`,
      target: "≥ 0.8× baseline",
    });
  }
  return figures;
}

/** Added latency at one connection, beside the bare proxy (and, for JSON, the proxy committing a row). */
async function latencyFigures(bench: GatewayBench, stream: boolean): Promise<Figure[]> {
  const mode = stream ? "streaming" : "JSON";
  const bareProxy = bareProxyOf(stream);
  const directLatency = await bench.load("direct", { ...light, stream });
  const gatewayLatency = await bench.during("light", () =>
    bench.healthy(`gateway ${mode} latency`, bench.running.origin, { ...light, stream }),
  );
  const gatewayAddedP50 = gatewayLatency.p50Ms - directLatency.p50Ms;
  const figures: Figure[] = [
    {
      name: `added latency p50, ${mode}, 1 connection`,
      value: gatewayAddedP50,
      unit: "ms",
      baseline: directLatency.p50Ms,
      baselineName: "direct p50",
      target: "≤ 0.5 ms",
    },
    {
      name: `added latency p99, ${mode}, 1 connection`,
      value: gatewayLatency.p99Ms - directLatency.p99Ms,
      unit: "ms",
      baseline: directLatency.p99Ms,
      baselineName: "direct p99",
    },
  ];
  // The floor under the gateway's figure: what a proxy adds on this machine, now, with and without making
  // each request durable before answering.
  const floors: readonly Reference[] = stream
    ? [bareProxy.reference]
    : [bareProxy.reference, "bare proxy + commit"];
  const floorLatencies = new Map<Reference, LoadResult>();
  for (const floor of floors) {
    const floorLatency = await bench.healthy(`${floor} ${mode} latency`, floor, { ...light, stream });
    floorLatencies.set(floor, floorLatency);
    figures.push({
      name: `added latency p50, ${mode}, 1 connection, ${floor}`,
      value: floorLatency.p50Ms - directLatency.p50Ms,
      unit: "ms",
      baseline: directLatency.p50Ms,
      baselineName: "direct p50",
    });
  }
  const bareLatency = floorLatencies.get(bareProxy.reference)!;
  figures.push({
    name: `added latency p50, ${mode}, 1 connection, gateway beside a bare proxy`,
    value: gatewayAddedP50,
    unit: "ms",
    baseline: bareLatency.p50Ms - directLatency.p50Ms,
    baselineName: `${bareProxy.name}'s added p50`,
    target: "≤ 3× baseline",
  });
  if (stream) {
    const directFirstByte = directLatency.timeToFirstByteP50Ms;
    figures.push({
      name: "added time to first byte p50, streaming, 1 connection, gateway beside a bare proxy",
      value: gatewayLatency.timeToFirstByteP50Ms - directFirstByte,
      unit: "ms",
      baseline: bareLatency.timeToFirstByteP50Ms - directFirstByte,
      baselineName: `${bareProxy.name}'s added time to first byte p50`,
      target: "≤ 2× baseline",
    });
  }
  return figures;
}

/**
 * The one-connection p50 at the end of a sustained load beside its start: each request leaves its hold row
 * removed behind it, and a hold sums its account's rows, so rows left until autovacuum's next visit (once a
 * minute) would make every later request slower (docs/operations.md).
 */
async function sustainedLatencyFigures(bench: GatewayBench): Promise<Figure[]> {
  const turns: LoadResult[] = [];
  for (let turn = 1; turn <= sustainedTurns; turn++)
    turns.push(
      await bench.during("light", () =>
        bench.healthy(`gateway JSON latency, sustained turn ${turn}`, bench.running.origin, {
          ...light,
          requests: sustainedTurnRequests,
        }),
      ),
    );
  return [
    {
      name: `latency p50, JSON, 1 connection, the last ${sustainedTurnRequests.toLocaleString("en-US")} of ${(sustainedTurns * sustainedTurnRequests).toLocaleString("en-US")} requests`,
      value: turns.at(-1)!.p50Ms,
      unit: "ms",
      baseline: turns[0]!.p50Ms,
      baselineName: `the first ${sustainedTurnRequests.toLocaleString("en-US")}'s p50`,
      target: "≤ 1.2× baseline",
    },
  ];
}

const ascending = (left: number, right: number) => left - right;

/**
 * An upstream that answers after 5 ms: the hold is placed while the upstream call is in flight. The target is
 * a difference of 1 ms, near the upstream timer's own jitter and the drift of a shared machine, so the four
 * endpoints (the floor among them) take turns in slices and each one's samples are pooled.
 */
async function slowUpstreamFigures(bench: GatewayBench): Promise<Figure[]> {
  const slow = { connections: 1, requests: slowLatencyRequests / slowLatencyRounds, slow: true };
  const slowTargets = {
    direct: "direct, 5 ms upstream",
    gateway: bench.running.origin,
    bare: "bare proxy, 5 ms upstream",
    floor: "bare proxy + commit, 5 ms upstream",
  };
  const slowSamples = {
    direct: [] as number[],
    gateway: [] as number[],
    bare: [] as number[],
    floor: [] as number[],
  };
  for (let round = 0; round < slowLatencyRounds; round++)
    for (const [name, target] of Object.entries(slowTargets) as [keyof typeof slowTargets, string][])
      slowSamples[name].push(
        ...(await bench.healthy(`${name} JSON latency, 5 ms upstream`, target, slow)).latenciesMs,
      );
  const p50Of = (samples: number[]) => percentile(samples.sort(ascending), 0.5);
  const slowDirectP50 = p50Of(slowSamples.direct);
  const slowGatewayAdded = p50Of(slowSamples.gateway) - slowDirectP50;
  const slowBareAdded = p50Of(slowSamples.bare) - slowDirectP50;
  return [
    {
      name: "added latency p50, JSON, 1 connection, 5 ms upstream",
      value: slowGatewayAdded,
      unit: "ms",
      baseline: slowDirectP50,
      baselineName: "direct p50, 5 ms upstream",
    },
    {
      name: "added latency p50, JSON, 1 connection, 5 ms upstream, gateway beside a bare proxy",
      value: slowGatewayAdded,
      unit: "ms",
      baseline: slowBareAdded,
      baselineName: "bare proxy's added p50, 5 ms upstream",
      target: "≤ baseline + 1 ms",
    },
    // What one durable commit before the answer adds by itself, beside the same bound: a complete answer's
    // last bytes wait for its usage's commit (what was delivered is billed, C10), so no gateway here is
    // below it.
    {
      name: "added latency p50, JSON, 1 connection, 5 ms upstream, the floor (bare proxy + one commit)",
      value: p50Of(slowSamples.floor) - slowDirectP50,
      unit: "ms",
      baseline: slowBareAdded,
      baselineName: "bare proxy's added p50, 5 ms upstream",
    },
  ];
}

/** Throughput again as one `npm start` process (it replaces the scale-out deployment). */
async function oneProcessFigures(bench: GatewayBench): Promise<Figure[]> {
  await bench.running.stop();
  bench.running = await startDeployment("one process", bench.environment);
  await bench.load(bench.running.origin, warmUp);
  const figures: Figure[] = [];
  for (const stream of [false, true])
    figures.push((await throughputOf(bench, bench.running.origin, stream, ", npm start")).figure);
  return figures;
}

/**
 * C10's overdraft bound: an account credited with a few won, hammered through the 5 ms upstream (so many
 * holds are in flight at once) by 64 connections, each until it is refused; once every hold is settled and
 * every charge posted, its balance beside minus its largest single charge, which it must not go below.
 */
async function overdraftFigures(origin: string, client: pg.Client): Promise<Figure[]> {
  const account = "bench-overdraft";
  const key = await provisionKey(origin, client, account, overdraftCreditWon);
  const hammered = await runLoad({
    origin,
    path: "/llm/v1/chat/completions",
    headers: { authorization: `Bearer ${key}` },
    body: chatBody(false, slowModel, costlyPrompt),
    connections: overdraftConnections,
    requestsMax: 100_000,
    durationMsMax: 60_000,
    untilRefused: true,
  });
  // Served (200) or refused for want of funds (400); anything else is a failure of the benchmark.
  const unexpected = Object.entries(hammered.statuses).filter(
    ([status]) => status !== "200" && status !== "400",
  );
  if (unexpected.length > 0)
    throw new Error(`overdraft run: unexpected answers ${JSON.stringify(hammered.statuses)}`);
  const served = hammered.statuses[200] ?? 0;
  const refused = hammered.statuses[400] ?? 0;

  // Settled: no hold open (every answer's usage recorded) and nothing pending (every charge posted).
  const deadline = Date.now() + 120_000;
  let funds: { balance: string; pending: string; held: string };
  for (;;) {
    const result = await client.query<{ balance: string; pending: string; held: string }>(
      `SELECT balance_won::text AS balance, pending_won::text AS pending, held_won::text AS held
         FROM account_funds WHERE account_kind = 'user' AND account_id = $1`,
      [account],
    );
    funds = result.rows[0]!;
    if (Number(funds.pending) === 0 && Number(funds.held) === 0) break;
    if (Date.now() > deadline)
      throw new Error(`overdraft run: the account did not settle within 2 minutes: ${JSON.stringify(funds)}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  const charges = await client.query<{ count: number; largest: string; total: string }>(
    `SELECT count(*)::int AS count, coalesce(max((data->>'amountWon')::numeric), 0)::text AS largest,
              coalesce(sum((data->>'amountWon')::numeric), 0)::text AS total
       FROM ledger_events
       WHERE type = 'UsageCharged' AND data->'account'->>'kind' = 'user' AND data->'account'->>'id' = $1`,
    [account],
  );
  const { count, largest, total } = charges.rows[0]!;
  if (count !== served)
    throw new Error(`overdraft run: ${served} requests served but ${count} charges posted`);
  const name = `overdraft, ₩${overdraftCreditWon} account, ${overdraftConnections} connections until refused`;
  return [
    {
      name: `${name}: final balance`,
      value: Number(funds.balance),
      unit: "₩",
      baseline: -Number(largest),
      baselineName: "minus the largest single charge (C10 floor)",
      target: "≥ baseline",
    },
    {
      name: `${name}: requests served`,
      value: served,
      unit: "requests",
      baseline: refused,
      baselineName: "requests refused",
    },
    {
      name: `${name}: won charged`,
      value: Number(total),
      unit: "₩",
      baseline: Number(overdraftCreditWon),
      baselineName: "credit",
    },
  ];
}

/**
 * Lag from UsageRecorded to UsageCharged (commit times in the ledger) for the usage recorded while the
 * gateway was under load, beside the same lag for usage recorded at one connection. Waits for the
 * reconciler to finish the backlog first.
 */
async function chargeLagFigures(
  client: pg.Client,
  windows: Record<"loaded" | "light", { from: Date; to: Date }[]>,
): Promise<Figure[]> {
  await untilEverythingCharged(client);
  const lag = (ranges: { from: Date; to: Date }[]) => chargeLagMs(client, { recordedWithin: ranges });
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
}

/**
 * CPU per request at 32 connections, JSON, by kind of process — the gateway, the worker, the PostgreSQL
 * backends serving them — beside the floor's (the bare proxy that commits one row per request, and its
 * backends) under the same load in the same run. Redis is left out: the server is shared with other work.
 */
async function cpuPerRequestFigures(options: {
  monitor: pg.Client;
  deployment: RunningDeployment;
  floorProxyPid: number;
  floor: () => Promise<LoadResult>;
  gateway: () => Promise<LoadResult>;
}): Promise<Figure[]> {
  const floorProxyBackends = { only: ["bench-durable-proxy"] };
  const floor = await cpuDuring(
    {
      proxy: async () => [options.floorProxyPid],
      postgres: () => backendPidsOf(options.monitor, floorProxyBackends),
    },
    options.floor,
  );
  const floorRequests = floor.result.requests;
  const floorUsPerRequest = ((floor.cpuMs.proxy + floor.cpuMs.postgres) * 1_000) / floorRequests;
  const { gateway: gatewayPid, worker: workerPid } = options.deployment.pids;
  const measured = await cpuDuring(
    {
      gateway: async () => [gatewayPid],
      worker: async () => (workerPid === undefined ? [] : [workerPid]),
      postgres: () => backendPidsOf(options.monitor, { except: floorProxyBackends.only }),
    },
    options.gateway,
  );
  const requests = measured.result.requests;
  const usPerRequest = (cpuMs: number) => (cpuMs * 1_000) / requests;
  const total = measured.cpuMs.gateway + measured.cpuMs.worker + measured.cpuMs.postgres;
  const beside = {
    unit: "µs/req",
    baseline: floorUsPerRequest,
    baselineName: "bare proxy + 1 commit, its process and backends",
  };
  return [
    {
      name: "CPU per request, JSON, 32 connections: gateway + worker + PostgreSQL",
      value: usPerRequest(total),
      ...beside,
      target: "≤ 1.5× baseline (issue 26)",
    },
    {
      name: "CPU per request, JSON, 32 connections: gateway process",
      value: usPerRequest(measured.cpuMs.gateway),
      ...beside,
    },
    {
      name: "CPU per request, JSON, 32 connections: worker process",
      value: usPerRequest(measured.cpuMs.worker),
      ...beside,
    },
    {
      name: "CPU per request, JSON, 32 connections: PostgreSQL backends",
      value: usPerRequest(measured.cpuMs.postgres),
      ...beside,
    },
  ];
}
