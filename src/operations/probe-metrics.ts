import { Gauge, Registry } from "prom-client";
import type { DependencyProbes } from "./dependency-probes";
import { queueDepthStates, within } from "./dependency-probes";

/**
 * Gauges read from the dependencies at scrape time: charge-queue depth, projection lag, the holds' log lag
 * and the pending charges' age, each absent from a scrape whose probe failed (readiness says why). One
 * registry per running service (its own probes), appended to the shared registry's text by the /metrics
 * handler.
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
  lagGauge(
    registry,
    "won_gateway_projection_lag_seconds",
    "Age of the oldest ledger event a projection has not applied yet, 0 when current (absent while unknown)",
    () => probes()?.projectionLagSeconds(),
    probeTimeoutMs,
  );
  lagGauge(
    registry,
    "won_gateway_holds_log_lag_seconds",
    "Age of the oldest settled hold not yet written to the ledger's log, 0 when none waits (absent while unknown)",
    () => probes()?.holdsLogLagSeconds(),
    probeTimeoutMs,
  );
  lagGauge(
    registry,
    "won_gateway_pending_charge_age_seconds",
    "Age of the oldest usage recorded and not charged yet, 0 when none waits (absent while unknown)",
    () => probes()?.pendingChargeAgeSeconds(),
    probeTimeoutMs,
  );
  return registry;
}

/** A gauge of one lag, in seconds, read by `probe` at each scrape. */
function lagGauge(
  registry: Registry,
  name: string,
  help: string,
  probe: () => Promise<number> | undefined,
  probeTimeoutMs: number,
): void {
  new Gauge({
    name,
    help,
    registers: [registry],
    async collect() {
      // A gauge without labels reads 0 once reset: its one series is removed, so that unknown is absent,
      // never "caught up" (an alert on the lag would stay quiet exactly while the database is away).
      this.reset();
      this.remove();
      const asked = probe();
      if (!asked) return;
      const lag = await within(asked, probeTimeoutMs).catch(() => undefined);
      if (lag !== undefined) this.set(lag);
    },
  });
}
