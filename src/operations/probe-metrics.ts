import { Gauge, Registry } from "prom-client";
import type { DependencyProbes } from "./dependency-probes";
import { queueDepthStates, within } from "./dependency-probes";

/**
 * Gauges read from the dependencies at scrape time: charge-queue depth and projection lag, each absent
 * from a scrape whose probe failed (readiness says why). One registry per running service (its own probes),
 * appended to the shared registry's text by the /metrics handler.
 */
export function createProbeMetrics(
  probes: () => DependencyProbes | undefined,
  probeTimeoutMs: number,
): Registry {
  const registry = new Registry();
  new Gauge({
    name: "won_gateway_queue_depth",
    help: "Jobs in the charge queue by state (absent while the queue does not answer)",
    labelNames: ["queue", "state"],
    registers: [registry],
    async collect() {
      this.reset();
      const current = probes();
      if (!current) return;
      const depth = await within(current.queueDepth(), probeTimeoutMs).catch(() => undefined);
      if (!depth) return;
      for (const state of queueDepthStates) this.set({ queue: "usage-charges", state }, depth[state]);
    },
  });
  new Gauge({
    name: "won_gateway_projection_lag_seconds",
    help: "Age of the oldest ledger event a projection has not applied yet, 0 when current (absent while unknown)",
    registers: [registry],
    async collect() {
      // A gauge without labels reads 0 once reset: its one series is removed, so that unknown is absent,
      // never "caught up" (an alert on the lag would stay quiet exactly while the database is away).
      this.reset();
      this.remove();
      const current = probes();
      if (!current) return;
      const lag = await within(current.projectionLagSeconds(), probeTimeoutMs).catch(() => undefined);
      if (lag !== undefined) this.set(lag);
    },
  });
  return registry;
}
