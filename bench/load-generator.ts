import { Pool } from "undici";
import { percentile } from "./measure";

/**
 * A closed-loop HTTP load generator: `connections` keep-alive connections, each sending the next request as
 * soon as the previous body is fully read. Bounded by request count and by time.
 *
 * Latency is from sending the request to the end of its body; time to first byte is from sending it to the
 * first chunk of its body (not its headers: a streaming endpoint may send headers before any output).
 */
export interface LoadResult {
  requests: number;
  failures: number;
  /** Answers by HTTP status; a transport error counts as status 0. */
  statuses: Record<number, number>;
  seconds: number;
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  timeToFirstByteP50Ms: number;
  timeToFirstByteP99Ms: number;
  /** Every request's latency, sorted: for pooling the samples of several runs. */
  latenciesMs: number[];
  /** Every request's time to first byte, sorted, likewise. */
  timesToFirstByteMs: number[];
}

export interface LoadOptions {
  origin: string;
  path: string;
  headers: Record<string, string>;
  /** Headers of the `request`-th request (from 0), over `headers`: e.g. a key rotated per request. */
  headersFor?: (request: number) => Record<string, string>;
  body: string;
  connections: number;
  requestsMax: number;
  durationMsMax: number;
  /** Each connection stops after its first answer other than 200 (e.g. hammering an account until refused). */
  untilRefused?: boolean;
}

export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  const pool = new Pool(options.origin, {
    connections: options.connections,
    pipelining: 1,
    keepAliveTimeout: 30_000,
  });
  const latencies: number[] = [];
  const timesToFirstByte: number[] = [];
  const statuses: Record<number, number> = {};
  let failures = 0;
  let issued = 0;
  const startedAt = performance.now();
  const deadline = startedAt + options.durationMsMax;
  const worker = async () => {
    while (issued < options.requestsMax && performance.now() < deadline) {
      const request = issued++;
      const headers = {
        "content-type": "application/json",
        ...options.headers,
        ...options.headersFor?.(request),
      };
      const requestStartedAt = performance.now();
      let status = 0;
      try {
        const response = await pool.request({
          method: "POST",
          path: options.path,
          headers,
          body: options.body,
        });
        status = response.statusCode;
        const firstChunkAt = await readToEnd(response.body);
        timesToFirstByte.push((firstChunkAt ?? performance.now()) - requestStartedAt);
      } catch {
        status = 0;
      }
      latencies.push(performance.now() - requestStartedAt);
      statuses[status] = (statuses[status] ?? 0) + 1;
      if (status !== 200) {
        failures++;
        if (options.untilRefused) return;
      }
    }
  };
  await Promise.all(Array.from({ length: options.connections }, worker));
  const seconds = (performance.now() - startedAt) / 1_000;
  await pool.close();
  latencies.sort((left, right) => left - right);
  timesToFirstByte.sort((left, right) => left - right);
  return {
    requests: latencies.length,
    failures,
    statuses,
    seconds,
    requestsPerSecond: latencies.length / seconds,
    p50Ms: percentile(latencies, 0.5),
    p99Ms: percentile(latencies, 0.99),
    timeToFirstByteP50Ms: percentile(timesToFirstByte, 0.5),
    timeToFirstByteP99Ms: percentile(timesToFirstByte, 0.99),
    latenciesMs: latencies,
    timesToFirstByteMs: timesToFirstByte,
  };
}

/** Reads a body to its end; resolves with when its first chunk arrived (undefined: the body was empty). */
async function readToEnd(body: AsyncIterable<unknown>): Promise<number | undefined> {
  let firstChunkAt: number | undefined;
  for await (const _chunk of body) firstChunkAt ??= performance.now();
  return firstChunkAt;
}
