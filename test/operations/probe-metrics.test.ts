import { describe, expect, it } from "vitest";
import type { DependencyProbes } from "../../src/operations/dependency-probes";
import { createProbeMetrics } from "../../src/operations/probe-metrics";

/**
 * The lags read at scrape time are absent while their probe fails: an alert on a lag must not read
 * "caught up" (0) while PostgreSQL is away.
 */

type Lag = () => Promise<number>;

function probesAnswering(lags: { projections: Lag; holdsLog: Lag; pendingCharges: Lag }): DependencyProbes {
  return {
    postgresql: async () => {},
    queueDepth: async () => ({ waiting: 2, active: 1, delayed: 0, failed: 0 }),
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
});
