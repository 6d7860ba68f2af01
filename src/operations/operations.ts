import { createServer, type Server } from "node:http";
import express, { type Router } from "express";
import type pg from "pg";
import type { Logger } from "pino";
import type { QueueBackend } from "../billing/queue/queue-backend";
import { limits } from "../kernel/limits";
import type { EventStore } from "../ledger/store/event-store";
import { createDependencyProbes, type DependencyProbes } from "./dependency-probes";
import { createOperationsRouter } from "./operations-routes";
import { createProbeMetrics } from "./probe-metrics";
import { Readiness, type ReadinessBounds } from "./readiness";

/** The version the API description carries: the package's. */
const apiVersion = "0.1.0";

/**
 * The operations surface of one process, wired: readiness (with `startDraining()` for the shutdown),
 * the /health and /metrics routes, and for worker-role processes, which serve no HTTP API, a small
 * listener of their own (`METRICS_PORT`).
 */

export interface Operations {
  readiness: Readiness;
  /**
   * The routes, bound to the service's ledger; pass as `operationsRouter` to `startService`. Without
   * `/metrics` when `metrics` is false: a gateway with a METRICS_PORT serves them there alone.
   */
  router(parts: { ledger: { pool: pg.Pool; store: EventStore } }, options?: { metrics: boolean }): Router;
  /** Serves every route, /metrics included, on their own port (METRICS_PORT). Resolves with the bound URL. */
  listen(port: number, host: string): Promise<string>;
  close(): Promise<void>;
}

export function createOperations(options: {
  queueBackend: QueueBackend;
  logger: Logger;
  bounds?: Partial<ReadinessBounds>;
}): Operations {
  const bounds: ReadinessBounds = {
    probeTimeoutMs: limits.readinessProbeTimeoutMs,
    projectionLagSecondsMax: limits.readinessProjectionLagSecondsMax,
    ...options.bounds,
  };
  const readiness = new Readiness(bounds);
  let probes: DependencyProbes | undefined;
  const probeMetrics = createProbeMetrics(() => probes, bounds.probeTimeoutMs);
  const routerOptions = { readiness, extraMetrics: () => probeMetrics.metrics(), version: apiVersion };
  const routes = createOperationsRouter(routerOptions);
  const routesWithoutMetrics = createOperationsRouter({ ...routerOptions, metrics: false });
  let server: Server | undefined;
  return {
    readiness,
    router(parts, routeOptions = { metrics: true }) {
      probes ??= createDependencyProbes({
        pool: parts.ledger.pool,
        store: parts.ledger.store,
        queueBackend: options.queueBackend,
      });
      readiness.attach(probes);
      return routeOptions.metrics ? routes : routesWithoutMetrics;
    },
    listen: (port, host) =>
      new Promise((resolve, reject) => {
        const app = express();
        app.disable("x-powered-by");
        app.use(routes);
        const listening = createServer(app).listen(port, host, () => {
          server = listening;
          const address = listening.address();
          const boundPort = typeof address === "object" && address ? address.port : port;
          options.logger.info({ port: boundPort }, "operations endpoints listening");
          resolve(`http://${host}:${boundPort}`);
        });
        listening.on("error", reject);
      }),
    async close() {
      readiness.startDraining();
      if (server) {
        const closing = new Promise<void>((resolve) => server!.close(() => resolve()));
        server.closeAllConnections();
        await closing;
      }
      await probes?.close();
    },
  };
}
