import express, { type Router } from "express";
import { metricsText } from "./metrics-registry";
import type { Readiness } from "./readiness";

/**
 * C11's operations endpoints: `/health/live`, `/health/ready`, `/metrics`. No authentication: they reveal
 * no key, user or request id; a deployment keeps them off the public network as it does the admin API.
 */
export function createOperationsRouter(options: {
  readiness: Readiness;
  /** Text appended to the shared registry's (this service's probe gauges). */
  extraMetrics: () => Promise<string>;
}): Router {
  const router = express.Router();
  router.get("/health/live", (_request, response) => {
    response.json({ status: "ok" });
  });
  router.get("/health/ready", async (_request, response) => {
    const report = await options.readiness.check();
    response.status(report.status === "ready" ? 200 : 503).json(report);
  });
  router.get("/metrics", async (_request, response) => {
    const [{ contentType, text }, extra] = await Promise.all([metricsText(), options.extraMetrics()]);
    response.status(200).type(contentType).send(`${text}${extra}`);
  });
  return router;
}
