import { Router } from "express";
import type { UpstreamRegistry } from "../generation/upstream-registry";

/**
 * `GET /admin/upstreams`: each upstream endpoint's health as this gateway process sees it (C13): the models
 * it serves, its breaker's state, its requests in flight and its recent failure rate. Names only, never a
 * URL or key. Per process: each gateway process keeps its own breakers.
 */
export function createUpstreamHealthRouter(upstreams: Pick<UpstreamRegistry, "health">): Router {
  const router = Router();
  router.get("/upstreams", (_request, response) => {
    response.json({ data: upstreams.health() });
  });
  return router;
}
