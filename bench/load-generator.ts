import { Pool } from "undici";
import { percentile } from "./measure";

/**
 * A closed-loop HTTP load generator: `connections` keep-alive connections, each sending the next request as
 * soon as the previous body is fully read. Bounded by request count and by time.
 */
export interface LoadResult {
  requests: number;
  failures: number;
  seconds: number;
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
}

export async function runLoad(options: {
  origin: string;
  path: string;
  headers: Record<string, string>;
  body: string;
  connections: number;
  requestsMax: number;
  durationMsMax: number;
}): Promise<LoadResult> {
  const pool = new Pool(options.origin, {
    connections: options.connections,
    pipelining: 1,
    keepAliveTimeout: 30_000,
  });
  const latencies: number[] = [];
  let failures = 0;
  let issued = 0;
  const startedAt = performance.now();
  const deadline = startedAt + options.durationMsMax;
  const worker = async () => {
    while (issued < options.requestsMax && performance.now() < deadline) {
      issued++;
      const requestStartedAt = performance.now();
      try {
        const response = await pool.request({
          method: "POST",
          path: options.path,
          headers: { "content-type": "application/json", ...options.headers },
          body: options.body,
        });
        await response.body.text();
        if (response.statusCode !== 200) failures++;
      } catch {
        failures++;
      }
      latencies.push(performance.now() - requestStartedAt);
    }
  };
  await Promise.all(Array.from({ length: options.connections }, worker));
  const seconds = (performance.now() - startedAt) / 1_000;
  await pool.close();
  latencies.sort((left, right) => left - right);
  return {
    requests: latencies.length,
    failures,
    seconds,
    requestsPerSecond: latencies.length / seconds,
    p50Ms: percentile(latencies, 0.5),
    p99Ms: percentile(latencies, 0.99),
  };
}
