import { describe, expect, it } from "vitest";
import { memoryFloors } from "../../bench/memory-floors";

/** The soak's memory figure: the floor of a sawtooth, judged in windows longer than its slowest cycle. */

const windows = { samplesPerMinute: 12, windowMinutes: 2 };

/**
 * Samples every 5 s for ten minutes: a saw over `floorOf(sample)`, dropping to the floor at each collection
 * in `collections` (sample indexes) and growing 8 MB a sample in between.
 */
function saw(collections: readonly number[], floorOf: (sample: number) => number): number[] {
  const samples: number[] = [];
  let lastCollection = 0;
  for (let sample = 0; sample < 10 * windows.samplesPerMinute; sample++) {
    if (collections.includes(sample)) lastCollection = sample;
    samples.push(floorOf(sample) + 8 * (sample - lastCollection));
  }
  return samples;
}

describe("memoryFloors", () => {
  it("given collections slowing to 90 s apart over a flat floor, then the floors agree", () => {
    // Every 30 s for five minutes, then every 90 s, the last one 105 s before the end: the last minute holds
    // no collection.
    const samples = saw([6, 12, 18, 24, 30, 36, 42, 48, 54, 60, 78, 96], () => 230);

    const { warm, last } = memoryFloors(samples, windows);

    expect(warm).toBe(230);
    expect(last).toBe(230);
    // What a one-minute window reads of the same saw: the cycle's phase, not growth.
    expect(Math.min(...samples.slice(-windows.samplesPerMinute))).toBeGreaterThan(230 * 1.1);
  });

  it("given a floor that grows, then the last window's floor shows the growth", () => {
    const samples = saw([18, 36, 54, 72, 90, 108], (sample) => 230 + sample * 0.5);

    const { warm, last } = memoryFloors(samples, windows);

    expect(last / warm).toBeGreaterThan(1.1);
  });

  it("given a run too short for two windows after the first minute, then its whole run is the warm floor", () => {
    expect(memoryFloors([300, 280, 290, 310, 305], windows)).toEqual({ warm: 280, last: 280 });
  });
});
