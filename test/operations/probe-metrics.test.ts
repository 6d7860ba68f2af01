import { describe, expect, it } from "vitest";
import type { DependencyProbes, QueueDepth } from "../../src/operations/dependency-probes";
import { createProbeMetrics } from "../../src/operations/probe-metrics";

/**
 * The lags read at scrape time are absent while their probe fails: an alert on a lag must not read
 * "caught up" (0) while PostgreSQL is away.
 */

type Lag = () => Promise<number>;

function probesAnswering(
  lags: { projections: Lag; holdsLog: Lag; pendingCharges: Lag },
  queueDepth: () => Promise<QueueDepth> = async () => ({ waiting: 2, active: 1, delayed: 0, failed: 0 }),
): DependencyProbes {
  return {
    postgresql: async () => {},
    queueDepth: () => queueDepth(),
    projectionLagSeconds: () => lags.projections(),
    holdsLogLagSeconds: () => lags.holdsLog(),
    pendingChargeAgeSeconds: () => lags.pendingCharges(),
    close: async () => {},
  };
}

const samplesOf = (text: string, name: string) =>
  text.split("\n").filter((line) => line.startsWith(`${name} `));

describe("probe metrics", () => {
  it.each([
    ["won_gateway_projection_lag_seconds", "projections"],
    ["won_gateway_holds_log_lag_seconds", "holdsLog"],
    ["won_gateway_pending_charge_age_seconds", "pendingCharges"],
  ] as const)(
    "shows %s when known, and no sample at all while its probe fails or hangs",
    async (name, probed) => {
      let lag: Lag = async () => 1.5;
      const lags = {
        projections: async () => 0,
        holdsLog: async () => 0,
        pendingCharges: async () => 0,
        [probed]: () => lag(),
      };
      const registry = createProbeMetrics(() => probesAnswering(lags), 100);

      expect(samplesOf(await registry.metrics(), name)).toEqual([`${name} 1.5`]);
      lag = async () => {
        throw new Error("connect ECONNREFUSED");
      };
      expect(samplesOf(await registry.metrics(), name)).toEqual([]);
      lag = () => new Promise(() => {});
      expect(samplesOf(await registry.metrics(), name)).toEqual([]);
      lag = async () => 0;
      expect(samplesOf(await registry.metrics(), name)).toEqual([`${name} 0`]);
    },
  );

  it("given the charge queue answering, then failing, then hanging, then its depth by state, then no sample at all", async () => {
    const name = "won_gateway_queue_depth";
    let depth: () => Promise<QueueDepth> = async () => ({ waiting: 3, active: 2, delayed: 1, failed: 4 });
    const lags = { projections: async () => 0, holdsLog: async () => 0, pendingCharges: async () => 0 };
    const registry = createProbeMetrics(() => probesAnswering(lags, () => depth()), 100);
    const depthSamples = async () =>
      (await registry.metrics()).split("\n").filter((line) => line.startsWith(`${name}{`));

    expect(await depthSamples()).toEqual([
      `${name}{queue="usage-charges",state="waiting"} 3`,
      `${name}{queue="usage-charges",state="active"} 2`,
      `${name}{queue="usage-charges",state="delayed"} 1`,
      `${name}{queue="usage-charges",state="failed"} 4`,
    ]);
    depth = async () => {
      throw new Error("connect ECONNREFUSED");
    };
    expect(await depthSamples()).toEqual([]);
    // A store that takes the connection and never answers: the scrape still answers, within the bound.
    depth = () => new Promise(() => {});
    expect(await depthSamples()).toEqual([]);
    depth = async () => ({ waiting: 0, active: 0, delayed: 0, failed: 0 });
    expect(await depthSamples()).toHaveLength(4);
  }, 10_000);
});
