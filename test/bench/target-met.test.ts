import { describe, expect, it } from "vitest";
import { type Figure, targetMet } from "../../bench/measure";

/** The bench's table marks each target row met or unmet from the target's own words. */

const figure = (value: number, baseline: number, target?: string, unit = "ms"): Figure => ({
  name: "figure",
  value,
  unit,
  baseline,
  baselineName: "baseline",
  target,
});

describe("targetMet", () => {
  it("reads a multiple of the baseline, either way, with or without the word", () => {
    expect(targetMet(figure(120, 100, "≥ 1.2× baseline"))).toBe(true);
    expect(targetMet(figure(119, 100, "≥ 1.2× baseline"))).toBe(false);
    expect(targetMet(figure(150, 100, "≤ 1.5× baseline (issue 26)"))).toBe(true);
    expect(targetMet(figure(151, 100, "≤ 1.5× baseline"))).toBe(false);
    expect(targetMet(figure(79, 100, "≥ 0.8× the baseline"))).toBe(false);
    expect(targetMet(figure(91, 100, "≥ 0.9×"))).toBe(true);
  });

  it("reads the baseline give or take an amount in the figure's unit", () => {
    expect(targetMet(figure(-0.36, -2.4, "≥ baseline", "₩"))).toBe(true);
    expect(targetMet(figure(4.23, 0.9, "≤ baseline + 1 ms"))).toBe(false);
    expect(targetMet(figure(1.8, 0.9, "≤ baseline + 1 ms"))).toBe(true);
    expect(targetMet(figure(1.8, 0.9, "≤ baseline + 1 s"))).toBeUndefined();
  });

  it("reads an amount in the figure's unit, thousands separated", () => {
    expect(targetMet(figure(3_100, 9_000, "≥ 3,000 req/s", "req/s"))).toBe(true);
    expect(targetMet(figure(618, 9_000, "≥ 3,000 req/s", "req/s"))).toBe(false);
    expect(targetMet(figure(0.6, 0.3, "≤ 0.5 ms"))).toBe(false);
    expect(targetMet(figure(5, 1, "≥ 3,000 events/s", "req/s"))).toBeUndefined();
  });

  it("says nothing where there is no target or no bound it can read", () => {
    expect(targetMet(figure(1, 1))).toBeUndefined();
    expect(targetMet(figure(1, 1, "within noise (ratio ≈ 1)"))).toBeUndefined();
  });

  it("counts a figure that could not be measured as unmet", () => {
    expect(targetMet(figure(Number.NaN, 1, "≤ 2× baseline"))).toBe(false);
  });
});
