import type { RequestListener } from "node:http";
import express, { type Router } from "express";
import type { Logger } from "pino";
import type { RequestLogEntry } from "./activity/request-log-entry";
import { apiErrors } from "./api-error";
import { isGenerationPath } from "./generation/generation-endpoints";
import { authorizationGivenTwice, authorizationGivenTwiceMessage } from "./http/authorization-header";
import { baseUrlHint, refuseNonJsonBodies } from "./middleware/base-url-hint";
import { errorHandler, sendError } from "./middleware/error-handler";
import { setPublicUrl } from "./middleware/public-origin";
import { refuseUnknownQueryParameters } from "./middleware/refuse-unknown-query-parameters";
import { refuseUnstorableText } from "./middleware/refuse-unstorable-text";
import { assignRequestId, requestId } from "./middleware/request-id";
import { securityHeaders } from "./middleware/security-headers";
import { storedNowhere } from "./middleware/stored-nowhere";
import { observationOf, requestObserver } from "./observation/request-observation";
import { apiRoutes } from "./openapi/api-routes";

/**
 * The HTTP edge. The generation endpoints (/llm/v1) take the lean node:http path; every other route goes
 * through express. Both translate requests into calls of plain functions and map their results and errors
 * to the wire the same way.
 */
export interface GatewayRouters {
  /** /llm/v1 (API-key authenticated), served without express. */
  generation: RequestListener;
  /** Mounted at /llm (session authenticated: /llm/apis, /llm/balance, /llm/billing). */
  account: Router;
  /** Mounted at /admin; absent when no ADMIN_TOKEN is configured. */
  admin?: Router;
  /** Mounted at the root: /health/live, /health/ready, /metrics, /openapi.json, /docs. */
  operations?: Router;
  /** Mounted at /console: the web console and its cookie-session exchange; `GET /` redirects to it. */
  console?: Router;
  /** Mounted at /ledger, no authentication: what anyone needs to verify a receipt (its public key). */
  ledger?: Router;
}

export function createApp(options: {
  routers: GatewayRouters;
  requestBodyBytesMax: number;
  logger: Logger;
  /** `PUBLIC_URL`: the origin browsers reach the gateway at (middleware/public-origin.ts). */
  publicUrl?: URL | undefined;
  /** Whether a model slug is served (the metrics label every other string "unknown"). */
  isServedModel?: (slug: string) => boolean;
  /** The family of a served model, the `gen_ai_provider_name` label. */
  familyOf?: (slug: string) => string | undefined;
  /** Takes each generation request's activity-log row (src/gateway/activity/request-log-writer.ts). */
  requestLog?: (entry: RequestLogEntry) => void;
}): RequestListener {
  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  app.set("trust proxy", false);
  setPublicUrl(app, options.publicUrl);
  app.use(requestId());
  app.use(securityHeaders());
  app.use(["/llm", "/admin", "/console/api"], storedNowhere());
  if (options.routers.operations) app.use(options.routers.operations);
  app.use(baseUrlHint());
  app.use(refuseNonJsonBodies());
  app.use(
    express.json({
      limit: options.requestBodyBytesMax,
      strict: true,
      type: ["application/json", "application/*+json"],
    }),
  );
  app.use(refuseUnstorableText());
  // The admin routes are closed only where they are served: without ADMIN_TOKEN there are none to refuse for.
  app.use(
    refuseUnknownQueryParameters(
      options.routers.admin ? apiRoutes : apiRoutes.filter((route) => !route.path.startsWith("/admin/")),
    ),
  );
  app.get("/healthz", (_request, response) => {
    response.json({ status: "ok" });
  });
  app.use("/llm", options.routers.account);
  if (options.routers.admin) app.use("/admin", options.routers.admin);
  if (options.routers.ledger) app.use("/ledger", options.routers.ledger);
  if (options.routers.console) {
    app.use("/console", options.routers.console);
    app.get("/", (_request, response) => response.redirect(302, "/console/"));
  }
  app.use((_request, _response, next) => {
    next(Object.assign(new Error("not found"), { notFound: true }));
  });
  app.use(errorHandler(options.logger));
  const { generation } = options.routers;
  const observe = requestObserver({
    logger: options.logger,
    isServedModel: options.isServedModel ?? (() => false),
    ...(options.familyOf ? { familyOf: options.familyOf } : {}),
    ...(options.requestLog ? { requestLog: options.requestLog } : {}),
  });
  return (request, response) => {
    observe(request, response);
    if (authorizationGivenTwice(request)) {
      const requestId = assignRequestId(response);
      sendError(response, apiErrors.unauthorized(authorizationGivenTwiceMessage), {
        logger: options.logger,
        requestId,
      });
      observationOf(response)?.handlerEnded();
    } else if (isGenerationPath(request.url ?? "")) generation(request, response);
    else app(request, response);
  };
}
