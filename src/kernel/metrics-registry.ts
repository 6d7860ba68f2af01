import { collectDefaultMetrics, Registry } from "prom-client";

/**
 * The one registry every gateway metric registers in: the process's default metrics (CPU, memory, event
 * loop lag, GC) plus the gateway's own. A module-level singleton, like prom-client's default registry, so
 * any module can observe without wiring; its own instance so that a library registering in prom-client's
 * global registry cannot add unbounded series to our scrape.
 */
export const metricsRegistry = new Registry();
collectDefaultMetrics({ register: metricsRegistry });

/** The Prometheus text exposition of every metric, and its content type. */
export async function metricsText(): Promise<{ contentType: string; text: string }> {
  return { contentType: metricsRegistry.contentType, text: await metricsRegistry.metrics() };
}
