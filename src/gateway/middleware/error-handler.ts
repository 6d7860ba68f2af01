import type { ServerResponse } from "node:http";
import type { ErrorRequestHandler } from "express";
import type { Logger } from "pino";
import { type HoldRefusal, HoldRefusedError, LedgerUnavailableError } from "../../billing/holds/hold-refusal";
import { PricingUnavailableError } from "../../billing/read-models/pricing-read-model";
import { limits } from "../../kernel/limits";
import { type ThrottledLog, throttledLog } from "../../kernel/throttled-log";
import { ProjectionLagError } from "../../ledger/projection/projection-waiter";
import { RecordedNotVisibleError } from "../../ledger/projection/recorded-not-visible";
import { WrongExpectedVersionError } from "../../ledger/store/event-store";
import {
  UnsupportedRequestError,
  UpstreamFailedError,
  UpstreamRejectedError,
  UpstreamThrottledError,
} from "../../providers/provider";
import { ApiError, apiErrors, errorBodyOf, invalidApiKeyMessages } from "../api-error";
import { sendJson } from "../http/json-response";
import { keyLimitRefusalOf } from "../key-limit-refusal";
import { observationOf } from "../observation/request-observation";

/** Maps every error to the spec's error body, once. Nothing else (stack, SQL, credentials) leaves here. */
export function toApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  if (error instanceof HoldRefusedError) return apiErrorOfRefusal(error.refusal);
  if (error instanceof LedgerUnavailableError) return apiErrors.ledgerUnavailable();
  if (error instanceof PricingUnavailableError)
    return apiErrors.pricingUnavailable(error.reason, error.request.model);
  if ((error as { notFound?: boolean }).notFound === true) return apiErrors.notFound("No such route");
  if (error instanceof UnsupportedRequestError) return apiErrors.validation(error.message);
  if (error instanceof UpstreamRejectedError) return apiErrors.upstreamRejected(error.message);
  if (error instanceof UpstreamFailedError)
    return apiErrors.upstreamFailed(error.message, error.retryAfterSeconds);
  if (error instanceof UpstreamThrottledError)
    return apiErrors.upstreamThrottled(error.message, error.retryAfterSeconds);
  if (error instanceof ProjectionLagError || error instanceof RecordedNotVisibleError)
    return apiErrors.recordedNotVisibleYet();
  if (error instanceof WrongExpectedVersionError) return apiErrors.contendedChange();
  if (isDatabaseUnavailable(error)) return apiErrors.ledgerUnavailable();
  const bodyParserError = error as { type?: string; status?: number; body?: unknown };
  if (bodyParserError.type === "entity.too.large") return apiErrors.validation("Request body is too large");
  if (bodyParserError.type === "entity.parse.failed")
    return apiErrors.validation(
      // The parser takes objects and arrays alone: a bare number, string or literal is JSON all the same.
      isJsonText(bodyParserError.body)
        ? "Request body must be a JSON object"
        : "Request body is not valid JSON",
    );
  if (bodyParserError.type === "encoding.unsupported" || bodyParserError.type === "charset.unsupported") {
    return apiErrors.validation("Unsupported request body encoding");
  }
  if (bodyParserError.status === 400) return apiErrors.validation("Malformed request");
  return apiErrors.internal();
}

function apiErrorOfRefusal(refusal: HoldRefusal): ApiError {
  switch (refusal.kind) {
    case "funds":
      return apiErrors.creditInsufficient(refusal.accountKind, refusal.availableWon);
    case "key-limit":
      return keyLimitRefusalOf({ reason: refusal.limit.kind, limit: refusal.limit.value }, new Date());
    // Found by the hold, after this gateway's copy of the key admitted the request: told as admission tells it.
    case "key-inactive":
      return apiErrors.unauthorized(invalidApiKeyMessages.unknown);
    case "model-not-allowed":
      return apiErrors.modelNotAllowed(refusal.model);
    default: {
      const unreachable: never = refusal;
      throw new Error(`unknown refusal ${JSON.stringify(unreachable)}`);
    }
  }
}

const unavailableCodes = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EPIPE",
  "57P01", // admin_shutdown
  "57P02", // crash_shutdown
  "57P03", // cannot_connect_now
  "55000", // database not accepting connections
  "53300", // too_many_connections
  "25006", // read_only_sql_transaction: a standby, or default_transaction_read_only (a failover's old primary)
  // The server gave the statement up: an operator's pg_cancel_backend, a statement_timeout or lock_timeout.
  "57014", // query_canceled
  "55P03", // lock_not_available
  "08000",
  "08003",
  "08006",
]);

/**
 * The database cannot be reached, refuses connections, takes no writes or gave the statement up: the ledger is
 * unavailable, not the request bad.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  if (!error || typeof error !== "object") return false;
  const { code, severity, message } = error as { code?: unknown; severity?: unknown; message?: unknown };
  if (typeof code === "string" && unavailableCodes.has(code)) return true;
  if (severity === "FATAL") return true;
  return (
    typeof message === "string" &&
    (message.includes("timeout exceeded when trying to connect") || message.includes("Connection terminated"))
  );
}

/** One throttle per service logger: the generation endpoints and the express routes share it. */
const ledgerOutageLogs = new WeakMap<Logger, ThrottledLog>();

function ledgerOutageLogOf(logger: Logger): ThrottledLog {
  let log = ledgerOutageLogs.get(logger);
  if (!log) {
    log = throttledLog(logger, limits.ledgerOutageLogIntervalMs);
    ledgerOutageLogs.set(logger, log);
  }
  return log;
}

export function errorHandler(logger: Logger): ErrorRequestHandler {
  return (error, _request, response, _next) => {
    sendError(response, error, { logger, requestId: response.locals.requestId });
  };
}

/** Answers with the error body; a 5xx is logged with its cause, which never reaches the client. */
export function sendError(
  response: ServerResponse,
  error: unknown,
  context: { logger: Logger; requestId: unknown },
): void {
  // The client went away (the upstream call was aborted for it): nobody to answer, nothing to report.
  if (response.destroyed) return;
  const apiError = toApiError(error);
  const observation = observationOf(response);
  if (observation) observation.error = apiError;
  // An answer the gateway chose (a cut at shutdown, a ledger outage it reports) is said in a line; anything
  // else is a failure, with where it happened.
  if (apiError.httpStatus >= 500 && error instanceof ApiError)
    context.logger.warn(
      {
        requestId: context.requestId,
        status: apiError.httpStatus,
        code: apiError.applicationCode,
        message: apiError.message,
      },
      "request answered with an error",
    );
  // The ledger away fails every request alike: said once an interval, each request in the access log.
  else if (
    error instanceof LedgerUnavailableError ||
    isDatabaseUnavailable(error) ||
    (error instanceof RecordedNotVisibleError && isDatabaseUnavailable(error.cause))
  )
    ledgerOutageLogOf(context.logger).error(
      { err: error, requestId: context.requestId },
      "request failed: the ledger is unavailable",
    );
  else if (apiError.httpStatus >= 500)
    context.logger.error({ err: error, requestId: context.requestId }, "request failed");
  // A body already under way (an export, a page of rows) cannot turn into an error body: the connection is
  // dropped before its last chunk, so the client sees a transfer cut short, never a complete-looking file.
  if (response.headersSent) {
    response.destroy();
    return;
  }
  if (apiError.retryAfterSeconds !== undefined)
    response.setHeader("retry-after", String(apiError.retryAfterSeconds));
  if (apiError.allowedMethods !== undefined) response.setHeader("allow", apiError.allowedMethods.join(", "));
  if (apiError.sendAgainSafe === false) response.setHeader("x-should-retry", "false");
  sendJson(response, apiError.httpStatus, errorBodyOf(apiError));
}

function isJsonText(body: unknown): boolean {
  if (typeof body !== "string") return false;
  try {
    JSON.parse(body);
    return true;
  } catch {
    return false;
  }
}
