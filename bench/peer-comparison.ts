import type { LoadResult } from "./load-generator";
import { type Figure, percentile } from "./measure";
import { cpuDuring, type ProcessKinds } from "./process-cpu";

/**
 * The gateway beside its peer, Portkey OSS, and beside the bench's own references — the bare proxy and the
 * floor (that proxy committing one row per request) — all in the same rounds, each round's order the
 * previous one's reversed (A B C D D C B A), so that no endpoint always takes the same place on shared cores.
 * Measured: JSON throughput and whole-box CPU per request at 32 connections (from the same loads), added
 * latency p50 and p99 at one connection over the simulator called directly, and a stream's added time to
 * first byte at one connection. Portkey writes nothing durable; the floor commits one row; the gateway holds,
 * records and charges every request.
 */

export const peers = ["bare proxy", "floor", "Portkey", "gateway"] as const;
export type Peer = (typeof peers)[number];

export interface PeerPlan {
  connections: number;
  requests: number;
  stream: boolean;
}

/** What the comparison needs of the section that runs it. */
export interface PeerComparison {
  /** A load through a peer, or on the simulator itself; fails the benchmark on any failed request. */
  load(endpoint: Peer | "direct", plan: PeerPlan): Promise<LoadResult>;
  /** The processes whose CPU is a peer's whole box (Portkey's: its one process). */
  processes(peer: Peer): ProcessKinds<string>;
  /** Resolves once the box has finished the last load's work (every usage charged). */
  settled(): Promise<void>;
}

/** Two rounds at 32 connections: the loads are long, and each figure pools both. */
const loadedRounds = 2;
const loadedConnections = 32;
/** Requests per load at 32 connections, at most (the section's time bound per load applies too). */
const loadedRequestsMax = 20_000;
/** Rounds at one connection, and requests per endpoint per round: 1,000 samples per endpoint in all. */
const lightRounds = 4;
const lightRequestsPerRound = 250;

const names: Record<Peer, string> = {
  "bare proxy": "the bare proxy",
  floor: "the floor (bare proxy + one commit)",
  Portkey: "Portkey OSS",
  gateway: "the gateway",
};

export async function peerFigures(comparison: PeerComparison): Promise<Figure[]> {
  const loaded = await loadedFigures(comparison);
  const latency = await latencyFigures(comparison);
  return [...loaded, ...latency.figures, ...(await firstByteFigures(comparison, latency.floorAddedP50))];
}

/** Each round's endpoints, the odd rounds in reverse. */
function* inRounds<Endpoint>(endpoints: readonly Endpoint[], rounds: number): Generator<Endpoint> {
  for (let round = 0; round < rounds; round++) yield* round % 2 === 0 ? endpoints : [...endpoints].reverse();
}

interface LoadedTotals {
  requests: number;
  seconds: number;
  cpuMs: number;
}

/**
 * Throughput and whole-box CPU per request at 32 connections, JSON. A load's CPU is read from before it starts
 * until the box has settled it (the gateway's charges included), its throughput over the load alone.
 */
async function loadedFigures(comparison: PeerComparison): Promise<Figure[]> {
  const totals = Object.fromEntries(
    peers.map((peer) => [peer, { requests: 0, seconds: 0, cpuMs: 0 }]),
  ) as Record<Peer, LoadedTotals>;
  const plan = { connections: loadedConnections, requests: loadedRequestsMax, stream: false };
  for (const peer of inRounds(peers, loadedRounds)) {
    const measured = await cpuDuring(comparison.processes(peer), async () => {
      const result = await comparison.load(peer, plan);
      await comparison.settled();
      return result;
    });
    totals[peer].requests += measured.result.requests;
    totals[peer].seconds += measured.result.seconds;
    totals[peer].cpuMs += Object.values<number>(measured.cpuMs).reduce((sum, ms) => sum + ms, 0);
  }
  const throughput = (peer: Peer) => totals[peer].requests / totals[peer].seconds;
  const cpuUsPerRequest = (peer: Peer) => (totals[peer].cpuMs * 1_000) / totals[peer].requests;
  const requestsPerSecond = besideFigures("req/s, JSON, 32 connections", "req/s", throughput);
  const cpu = besideFigures("whole-box CPU per request, JSON, 32 connections", "µs/req", cpuUsPerRequest);
  return [
    requestsPerSecond("gateway", "Portkey", "≥ 1.2× baseline"),
    requestsPerSecond("gateway", "floor", "≥ 0.5× baseline"),
    requestsPerSecond("gateway", "bare proxy"),
    requestsPerSecond("Portkey", "floor"),
    cpu("gateway", "floor", "≤ 1.5× baseline"),
    cpu("gateway", "Portkey"),
    cpu("gateway", "bare proxy"),
    cpu("Portkey", "floor"),
  ];
}

/** Figures of one measure, each a subject beside another endpoint, both from the same rounds. */
function besideFigures(measure: string, unit: string, figureOf: (peer: Peer) => number) {
  return (subject: Peer, other: Peer, target?: string, otherName = names[other]): Figure => ({
    name: `${measure}, peer rounds: ${names[subject]} beside ${otherName}`,
    value: figureOf(subject),
    unit,
    baseline: figureOf(other),
    baselineName: otherName,
    ...(target ? { target } : {}),
  });
}

/** Every sample of each endpoint's loads, taken in rounds at one connection. */
async function samplesInRounds<Endpoint extends Peer | "direct">(
  comparison: PeerComparison,
  endpoints: readonly Endpoint[],
  stream: boolean,
  samplesOf: (result: LoadResult) => readonly number[],
): Promise<Record<Endpoint, number[]>> {
  const samples = Object.fromEntries(endpoints.map((endpoint) => [endpoint, [] as number[]]));
  const plan = { connections: 1, requests: lightRequestsPerRound, stream };
  for (const endpoint of inRounds(endpoints, lightRounds))
    samples[endpoint]!.push(...samplesOf(await comparison.load(endpoint, plan)));
  for (const pooled of Object.values(samples)) pooled.sort((left, right) => left - right);
  return samples as Record<Endpoint, number[]>;
}

/** The added latency at one connection, JSON: what each peer adds to the simulator's own p50 and p99. */
async function latencyFigures(
  comparison: PeerComparison,
): Promise<{ figures: Figure[]; floorAddedP50: number }> {
  const samples = await samplesInRounds(
    comparison,
    ["direct", ...peers],
    false,
    (result) => result.latenciesMs,
  );
  const added = (fraction: number) => (peer: Peer) =>
    percentile(samples[peer], fraction) - percentile(samples.direct, fraction);
  const p50 = besideFigures("added latency p50, JSON, 1 connection", "ms", added(0.5));
  const p99 = besideFigures("added latency p99, JSON, 1 connection", "ms", added(0.99));
  const figures = [
    p50("gateway", "floor", "≤ 2× baseline"),
    p50("gateway", "Portkey"),
    p50("gateway", "bare proxy"),
    p50("Portkey", "floor"),
    p99("gateway", "floor"),
    p99("gateway", "Portkey"),
    p99("gateway", "bare proxy"),
  ];
  return { figures, floorAddedP50: added(0.5)("floor") };
}

/**
 * A stream's added time to first byte at one connection (the floor answers whole, so it has none): beside
 * the floor's added JSON p50 from the latency rounds, the least a gateway that commits before answering adds.
 */
async function firstByteFigures(comparison: PeerComparison, floorAddedP50: number): Promise<Figure[]> {
  const streaming = ["direct", "bare proxy", "Portkey", "gateway"] as const;
  const samples = await samplesInRounds(comparison, streaming, true, (result) => result.timesToFirstByteMs);
  const added = (peer: Peer) =>
    peer === "floor" ? floorAddedP50 : percentile(samples[peer], 0.5) - percentile(samples.direct, 0.5);
  const firstByte = besideFigures("added time to first byte p50, streaming, 1 connection", "ms", added);
  return [
    firstByte("gateway", "floor", "≤ 1.5× baseline", "the floor's added latency p50, JSON"),
    firstByte("gateway", "Portkey"),
    firstByte("gateway", "bare proxy", undefined, "the bare proxy piping the stream"),
    firstByte("Portkey", "bare proxy", undefined, "the bare proxy piping the stream"),
  ];
}
