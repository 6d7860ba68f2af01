/** Small timing helpers shared by the benchmarks. */

export interface Figure {
  name: string;
  value: number;
  unit: string;
  baseline: number;
  baselineName: string;
  /** Ratio oriented so that > 1 means the gateway is better than… or as fast as the baseline allows. */
  target?: string;
}

export async function timed<T>(work: () => Promise<T>): Promise<{ result: T; seconds: number }> {
  const startedAt = performance.now();
  const result = await work();
  return { result, seconds: (performance.now() - startedAt) / 1_000 };
}

export function percentile(sortedMilliseconds: readonly number[], fraction: number): number {
  if (sortedMilliseconds.length === 0) return Number.NaN;
  const index = Math.min(sortedMilliseconds.length - 1, Math.ceil(fraction * sortedMilliseconds.length) - 1);
  return sortedMilliseconds[Math.max(0, index)]!;
}

export async function runConcurrently(
  workers: number,
  work: (worker: number) => Promise<void>,
): Promise<void> {
  await Promise.all(Array.from({ length: workers }, (_, worker) => work(worker)));
}
