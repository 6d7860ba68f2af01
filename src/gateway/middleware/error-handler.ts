import type { ErrorRequestHandler } from "express";
import type { Logger } from "pino";
import { ProjectionLagError } from "../../ledger/projection-waiter";
import { UpstreamFailedError, UpstreamRejectedError } from "../../providers/provider";
import { ApiError, apiErrors, errorBodyOf } from "../api-error";

/** Maps every error to the spec's error body, once. Nothing else (stack, SQL, credentials) leaves here. */
export function toApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  if ((error as { notFound?: boolean }).notFound === true) return apiErrors.notFound("No such route");
  if (error instanceof UpstreamRejectedError) return apiErrors.upstreamRejected(error.message);
  if (error instanceof UpstreamFailedError) return apiErrors.upstreamFailed(error.message);
  if (error instanceof ProjectionLagError || isDatabaseUnavailable(error)) return apiErrors.ledgerUnavailable();
  const bodyParserError = error as { type?: string; status?: number };
  if (bodyParserError.type === "entity.too.large") return apiErrors.validation("Request body is too large");
  if (bodyParserError.type === "entity.parse.failed") return apiErrors.validation("Request body is not valid JSON");
  if (bodyParserError.type === "encoding.unsupported" || bodyParserError.type === "charset.unsupported") {
    return apiErrors.validation("Unsupported request body encoding");
  }
  if (bodyParserError.status === 400) return apiErrors.validation("Malformed request");
  return apiErrors.internal();
}

/** Connection refused/reset, or PostgreSQL shutting down or refusing connections. */
export function isDatabaseUnavailable(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  if (typeof code !== "string") return false;
  return ["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "57P01", "57P02", "57P03", "08000", "08003", "08006"].includes(code)
    || (error as Error).message?.includes("timeout exceeded when trying to connect") === true
    || (error as Error).message?.includes("Connection terminated") === true;
}

export function errorHandler(logger: Logger): ErrorRequestHandler {
  return (error, _request, response, _next) => {
    const apiError = toApiError(error);
    if (apiError.httpStatus >= 500) logger.error({ err: error, requestId: response.locals.requestId }, "request failed");
    if (response.headersSent) {
      response.end();
      return;
    }
    response.status(apiError.httpStatus).json(errorBodyOf(apiError));
  };
}
