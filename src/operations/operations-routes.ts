import express, { type Router } from "express";
import { docsPageHtml } from "../gateway/openapi/docs-page";
import { buildOpenApiDocument } from "../gateway/openapi/openapi-document";
import { metricsText } from "../kernel/metrics-registry";
import type { Readiness } from "./readiness";

/**
 * C11's operations endpoints: `/health/live`, `/health/ready`, `/metrics`, `/openapi.json`, `/docs`. No authentication: they reveal
 * no key, user or request id; a deployment keeps them off the public network as it does the admin API.
 */
export function createOperationsRouter(options: {
  readiness: Readiness;
  /** Text appended to the shared registry's (this service's probe gauges). */
  extraMetrics: () => Promise<string>;
  /** The API version shown in the document. */
  version: string;
  /** Whether /metrics is served here (not on a gateway's API port when it has a METRICS_PORT). */
  metrics?: boolean;
}): Router {
  const router = express.Router();
  // Built on first request, then kept: the document only changes with the code.
  let openApiText: string | undefined;
  router.get("/openapi.json", (_request, response) => {
    openApiText ??= JSON.stringify(buildOpenApiDocument({ version: options.version }));
    response.status(200).type("application/json").send(openApiText);
  });
  router.get("/docs", (_request, response) => {
    response.status(200).type("text/html").send(docsPageHtml);
  });
  router.get("/health/live", (_request, response) => {
    response.json({ status: "ok" });
  });
  router.get("/health/ready", async (_request, response) => {
    const report = await options.readiness.check();
    response.status(report.status === "ready" ? 200 : 503).json(report);
  });
  if (options.metrics === false) return router;
  router.get("/metrics", async (_request, response) => {
    const [{ contentType, text }, extra] = await Promise.all([metricsText(), options.extraMetrics()]);
    response.status(200).type(contentType).send(`${text}${extra}`);
  });
  return router;
}
