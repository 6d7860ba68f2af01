/**
 * Axis ticks a reader can count in: 0 and then equal steps of 1, 2, 2.5 or 5 times a power of ten, the last
 * at or above the largest value (₩0 / 20 / 40 / 60 / 80 for a largest day of ₩79.59). Recharts' own ticks
 * drop labels that crowd and start from the data, which gave ₩0 / 20 / 40 / 80.
 */

const stepMultipliers = [1, 2, 2.5, 5, 10] as const;

export interface NiceTicks {
  ticks: number[];
  /** The axis' upper bound: the last tick. */
  top: number;
}

export function niceTicks(
  largest: number,
  options: { intervals?: number; integers?: boolean } = {},
): NiceTicks {
  const intervals = options.intervals ?? 4;
  // Nothing to show yet: steps of one, so the empty axis still reads as an axis.
  if (!Number.isFinite(largest) || largest <= 0) return ticksOf(1, intervals);
  const rawStep = largest / intervals;
  const magnitude = 10 ** Math.floor(Math.log10(rawStep));
  const multiplier = stepMultipliers.find((candidate) => candidate * magnitude >= rawStep) ?? 10;
  let step = multiplier * magnitude;
  if (options.integers && step < 1) step = 1;
  const count = Math.ceil(largest / step - 1e-9);
  return ticksOf(step, Math.max(1, count));
}

function ticksOf(step: number, count: number): NiceTicks {
  // Products like 3 × 0.1 are not exact in binary; twelve significant digits are more than an axis shows.
  const ticks = Array.from({ length: count + 1 }, (_unused, index) => Number((index * step).toPrecision(12)));
  return { ticks, top: ticks[ticks.length - 1]! };
}
