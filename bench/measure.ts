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

/**
 * Whether a figure meets its target, read from the target's words: a multiple of the baseline ("≥ 1.2×
 * baseline", or "≥ 0.9×" alone), the baseline give or take an amount in the figure's unit ("≤ baseline + 1
 * ms"), or an amount in the figure's unit ("≥ 3,000 req/s"); a note in parentheses after it is ignored.
 * Undefined where there is no target or its words state no bound of these kinds ("within noise").
 */
export function targetMet(figure: Figure): boolean | undefined {
  const bound = /^([≥≤])\s*(.+)$/.exec((figure.target ?? "").replace(/\s*\(.*\)\s*$/, "").trim());
  if (!bound) return undefined;
  const limit = limitOf(bound[2]!, figure);
  if (limit === undefined) return undefined;
  return bound[1] === "≥" ? figure.value >= limit : figure.value <= limit;
}

/** The value a target's bound stands for, or undefined when its words are not one of targetMet's kinds. */
function limitOf(words: string, figure: Figure): number | undefined {
  const amount = (digits: string) => Number(digits.replaceAll(",", ""));
  const multiple = /^([\d.,]+)×(?:\s*(?:the\s+)?baseline)?$/.exec(words);
  if (multiple) return amount(multiple[1]!) * figure.baseline;
  const offset = /^baseline(?:\s*([+−-])\s*([\d.,]+)\s*(\S+))?$/.exec(words);
  if (offset) {
    if (offset[1] === undefined) return figure.baseline;
    if (offset[3] !== figure.unit) return undefined;
    return figure.baseline + (offset[1] === "+" ? 1 : -1) * amount(offset[2]!);
  }
  const absolute = /^([\d.,]+)\s*(\S+)$/.exec(words);
  if (absolute && absolute[2] === figure.unit) return amount(absolute[1]!);
  return undefined;
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
