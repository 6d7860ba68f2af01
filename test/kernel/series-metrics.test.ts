import { Counter, Histogram, Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { SeriesCounter } from "../../src/kernel/series-counter";
import { SeriesHistogram } from "../../src/kernel/series-histogram";

/**
 * A counter and a histogram whose label combinations are resolved once scrape exactly as prom-client's own
 * do after the same observations: the same text, the same JSON, the same after a reset.
 */

const histogramConfiguration = {
  name: "example_duration_seconds",
  help: "An example",
  labelNames: ["model", "status"],
  buckets: [0.01, 0.1, 1],
};
const counterConfiguration = {
  name: "example_requests_total",
  help: "An example",
  labelNames: ["model", "status"],
};

function registries() {
  const plain = new Registry();
  const series = new Registry();
  return {
    plain,
    series,
    plainHistogram: new Histogram({ ...histogramConfiguration, registers: [plain] }),
    plainCounter: new Counter({ ...counterConfiguration, registers: [plain] }),
    seriesHistogram: new SeriesHistogram({ ...histogramConfiguration, registers: [series] }),
    seriesCounter: new SeriesCounter({ ...counterConfiguration, registers: [series] }),
  };
}

// On a bound, between bounds, above every bound, labels in another order, a second combination.
const observations: [Record<string, string>, number][] = [
  [{ model: "alpha", status: "200" }, 0.005],
  [{ model: "beta", status: "500" }, 0.1],
  [{ model: "alpha", status: "200" }, 5],
  [{ status: "200", model: "alpha" }, 1],
  [{ model: "alpha", status: "200" }, 0.1],
];

describe("series metrics", () => {
  it("scrape as prom-client's own metrics after the same observations", async () => {
    const given = registries();
    for (const [labels, value] of observations) {
      given.plainHistogram.observe(labels, value);
      given.plainCounter.inc(labels);
      given.seriesHistogram.series(labels).observe(value);
      given.seriesCounter.series(labels).inc();
    }
    expect(await given.series.metrics()).toBe(await given.plain.metrics());
    expect(await given.series.getMetricsAsJSON()).toEqual(await given.plain.getMetricsAsJSON());
  });

  it("observe through prom-client's own signature too", async () => {
    const given = registries();
    for (const [labels, value] of observations) {
      given.plainHistogram.observe(labels, value);
      given.seriesHistogram.observe(labels, value);
    }
    expect(await given.series.getSingleMetricAsString(histogramConfiguration.name)).toBe(
      await given.plain.getSingleMetricAsString(histogramConfiguration.name),
    );
  });

  it("show only what was observed after a reset, through the handles kept before it", async () => {
    const given = registries();
    const alpha = { model: "alpha", status: "200" };
    const beta = { model: "beta", status: "500" };
    const kept = { histogram: given.seriesHistogram.series(beta), counter: given.seriesCounter.series(beta) };
    for (const [labels, value] of observations) {
      given.plainHistogram.observe(labels, value);
      given.plainCounter.inc(labels);
      given.seriesHistogram.series(labels).observe(value);
      given.seriesCounter.series(labels).inc();
    }
    given.seriesCounter.series(alpha).inc();
    given.plain.resetMetrics();
    given.series.resetMetrics();
    given.plainHistogram.observe(beta, 0.2);
    given.plainCounter.inc(beta);
    kept.histogram.observe(0.2);
    kept.counter.inc();
    expect(await given.series.metrics()).toBe(await given.plain.metrics());
  });

  it("refuse a label the metric does not have, and a value that is not a number", () => {
    const given = registries();
    expect(() => given.seriesHistogram.series({ model: "alpha", region: "x" } as never)).toThrow(/region/);
    expect(() => given.seriesCounter.series({ model: "alpha", region: "x" } as never)).toThrow();
    expect(() => given.seriesHistogram.series({ model: "alpha" }).observe(Number.NaN)).toThrow(TypeError);
  });
});
