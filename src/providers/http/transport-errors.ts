import { UpstreamFailedError, UpstreamRejectedError } from "../provider";
import { extractUpstreamErrorMessage, sanitiseUpstreamMessage } from "./upstream-error-message";

const timeoutCodes: ReadonlySet<string> = new Set([
  "UND_ERR_CONNECT_TIMEOUT",
  "UND_ERR_HEADERS_TIMEOUT",
  "UND_ERR_BODY_TIMEOUT",
  "ETIMEDOUT",
]);

/** No connection was made: refused, no such host, no route. */
const unreachableCodes: ReadonlySet<string> = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENETDOWN",
]);

/** A connection was made, then lost: closed or reset by the upstream (or between), before or mid-answer. */
const droppedCodes: ReadonlySet<string> = new Set([
  "UND_ERR_SOCKET",
  "UND_ERR_CLOSED",
  "ECONNRESET",
  "ECONNABORTED",
  "EPIPE",
]);

const malformedCodes: ReadonlySet<string> = new Set([
  "UND_ERR_RES_CONTENT_LENGTH_MISMATCH",
  "UND_ERR_RES_EXCEEDED_MAX_SIZE",
  "HPE_INVALID_CHUNK_SIZE",
  "HPE_INVALID_CONSTANT",
  "HPE_INVALID_HEADER_TOKEN",
]);

/**
 * Maps what undici or the socket threw to the contract's errors. A cancellation by our caller is passed
 * through as the caller's own abort reason: it is not an upstream failure. Anything unrecognised is a
 * programmer error and is returned unchanged, so it surfaces instead of being disguised.
 */
export function mapTransportError(error: unknown, signal: AbortSignal): unknown {
  if (signal.aborted) return signal.reason ?? error;
  if (error instanceof UpstreamFailedError || error instanceof UpstreamRejectedError) return error;
  const code = errorCode(error);
  if (code === undefined) return error;
  if (timeoutCodes.has(code)) return new UpstreamFailedError("timeout", "upstream did not answer in time");
  if (unreachableCodes.has(code))
    return new UpstreamFailedError("connection", "could not reach the upstream");
  if (droppedCodes.has(code))
    return new UpstreamFailedError("connection", "the connection to the upstream was closed or reset");
  if (malformedCodes.has(code)) return new UpstreamFailedError("malformed", "upstream sent a broken reply");
  return error;
}

function errorCode(error: unknown): string | undefined {
  if (typeof error !== "object" || error === null || !("code" in error)) return undefined;
  return typeof error.code === "string" ? error.code : undefined;
}

/**
 * The error for a non-2xx answer: 4xx is the request's fault (rejected), anything else the upstream's
 * (failed). A rejection keeps the upstream's own message, sanitised, because it tells the client what to fix;
 * a failure says only the status: what a failing upstream writes is about its own insides (a self-hosted
 * server's exception and its trace), which C3 never shows a client, and the client can fix nothing in it.
 */
export function statusError(
  statusCode: number,
  bodyText: string,
  secrets: readonly string[],
  retryAfterMs?: number,
): UpstreamRejectedError | UpstreamFailedError {
  if (statusCode >= 400 && statusCode < 500) {
    const detail = detailOf(extractUpstreamErrorMessage(bodyText), secrets);
    return new UpstreamRejectedError(
      statusCode,
      `upstream rejected the request (HTTP ${statusCode})${detail}`,
      retryAfterMs,
    );
  }
  return new UpstreamFailedError(
    "status",
    `upstream failed (HTTP ${statusCode})`,
    statusCode,
    undefined,
    retryAfterMs,
  );
}

/**
 * A failure the upstream reported inside a 200 reply: an error event in a stream that had started, or a
 * response whose status is "failed".
 */
export function reportedFailureError(upstreamMessage: string | null | undefined): UpstreamFailedError {
  const detail = detailOf(upstreamMessage, []);
  return new UpstreamFailedError("status", `upstream reported a failure${detail}`);
}

/** The upstream's message, sanitised, as the tail of ours (": …"); nothing when none is left to show. */
function detailOf(upstreamMessage: string | null | undefined, secrets: readonly string[]): string {
  const text = upstreamMessage ? sanitiseUpstreamMessage(upstreamMessage, secrets) : "";
  return text === "" ? "" : `: ${text}`;
}
