/**
 * Whether a process's memory stayed flat over a soak, from its resident memory sampled at a fixed interval.
 * Resident memory saws with each major collection, so one sample, or even a minute's median, says little: a
 * leak shows in the saw's floor, what a process still holds after a collection. Each window is longer than
 * the slowest cycle between collections (the worker's, up to about 90 s at full load), or it may hold no
 * floor at all and judge the cycle's phase instead of growth: the lowest sample of the window after the
 * first minute (caches filled, JIT warm) against the lowest of the last window. A run too short for both (a
 * trial) compares its whole run with its last window.
 */
export function memoryFloors(
  samples: readonly number[],
  options: { samplesPerMinute: number; windowMinutes: number },
): { warm: number; last: number } {
  if (samples.length === 0) throw new Error("no memory samples to judge");
  const windowSamples = options.windowMinutes * options.samplesPerMinute;
  const warmStart = options.samplesPerMinute;
  const warm =
    samples.length >= warmStart + 2 * windowSamples
      ? samples.slice(warmStart, warmStart + windowSamples)
      : samples;
  return { warm: Math.min(...warm), last: Math.min(...samples.slice(-windowSamples)) };
}
