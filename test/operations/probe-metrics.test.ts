import { describe, expect, it } from "vitest";
import type { DependencyProbes } from "../../src/operations/dependency-probes";
import { createProbeMetrics } from "../../src/operations/probe-metrics";

/**
 * The gauges read at scrape time are absent while their probe fails: an alert on the projection lag must
 * not read "caught up" (0) while PostgreSQL is away.
 */

function probesAnswering(lag: () => Promise<number>): DependencyProbes {
  return {
    postgresql: async () => {},
    queueDepth: async () => ({ waiting: 2, active: 1, delayed: 0, failed: 0 }),
    projectionLagSeconds: lag,
    close: async () => {},
  };
}

const lagSamples = (text: string) =>
  text.split("\n").filter((line) => line.startsWith("won_gateway_projection_lag_seconds"));

describe("probe metrics", () => {
  it("shows the projection lag when known, and no sample at all while its probe fails or hangs", async () => {
    let lag: () => Promise<number> = async () => 1.5;
    const registry = createProbeMetrics(() => probesAnswering(() => lag()), 100);

    expect(lagSamples(await registry.metrics())).toEqual(["won_gateway_projection_lag_seconds 1.5"]);
    lag = async () => {
      throw new Error("connect ECONNREFUSED");
    };
    expect(lagSamples(await registry.metrics())).toEqual([]);
    lag = () => new Promise(() => {});
    expect(lagSamples(await registry.metrics())).toEqual([]);
    lag = async () => 0;
    expect(lagSamples(await registry.metrics())).toEqual(["won_gateway_projection_lag_seconds 0"]);
  });
});
