import express, { type Router } from "express";
import type { Logger } from "pino";
import { errorHandler } from "./middleware/error-handler";
import { requestId } from "./middleware/request-id";

/**
 * The HTTP edge. Express stays here: routers below translate requests into calls of plain functions and
 * map their results and errors to the wire.
 */
export interface GatewayRouters {
  /** Mounted at /llm/v1 (API-key authenticated). */
  generation: Router;
  /** Mounted at /llm (session authenticated: /llm/apis, /llm/balance, /llm/billing). */
  account: Router;
  /** Mounted at /admin; absent when no ADMIN_TOKEN is configured. */
  admin?: Router;
}

export function createApp(options: {
  routers: GatewayRouters;
  requestBodyBytesMax: number;
  logger: Logger;
}): express.Express {
  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  app.set("trust proxy", false);
  app.use(requestId());
  app.use(
    express.json({
      limit: options.requestBodyBytesMax,
      strict: true,
      type: ["application/json", "application/*+json"],
    }),
  );
  app.get("/healthz", (_request, response) => {
    response.json({ status: "ok" });
  });
  app.use("/llm/v1", options.routers.generation);
  app.use("/llm", options.routers.account);
  if (options.routers.admin) app.use("/admin", options.routers.admin);
  app.use((_request, _response, next) => {
    next(Object.assign(new Error("not found"), { notFound: true }));
  });
  app.use(errorHandler(options.logger));
  return app;
}
