import { errors as undiciErrors } from "undici";
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

/**
 * No secure connection could be set up: the handshake failed (TLS spoken to a plain HTTP port, no common
 * protocol) or the certificate was refused (Node's codes for OpenSSL's X509 verification errors).
 */
const tlsCodes: ReadonlySet<string> = new Set([
  "EPROTO",
  "CERT_HAS_EXPIRED",
  "CERT_NOT_YET_VALID",
  "CERT_REVOKED",
  "CERT_UNTRUSTED",
  "CERT_REJECTED",
  "CERT_SIGNATURE_FAILURE",
  "CERT_CHAIN_TOO_LONG",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_DECODE_ISSUER_PUBLIC_KEY",
  "INVALID_CA",
  "INVALID_PURPOSE",
  "PATH_LENGTH_EXCEEDED",
  "HOSTNAME_MISMATCH",
]);
const tlsCodePrefixes: readonly string[] = ["ERR_SSL_", "ERR_TLS_"];

/**
 * A reply that broke HTTP itself. undici's own parser errors carry no code (HTTPParserError: a status
 * line, a header or a chunk size that does not parse), so they are told apart by class.
 */
const malformedCodes: ReadonlySet<string> = new Set([
  "UND_ERR_RES_CONTENT_LENGTH_MISMATCH",
  "UND_ERR_RES_EXCEEDED_MAX_SIZE",
  "UND_ERR_HEADERS_OVERFLOW",
]);

/**
 * Maps what undici or the socket threw to the contract's errors. A cancellation by our caller is passed
 * through as the caller's own abort reason: it is not an upstream failure. Anything unrecognised is a
 * programmer error and is returned unchanged, so it surfaces instead of being disguised.
 */
export function mapTransportError(error: unknown, signal: AbortSignal): unknown {
  if (signal.aborted) return signal.reason ?? error;
  if (error instanceof UpstreamFailedError || error instanceof UpstreamRejectedError) return error;
  if (error instanceof undiciErrors.HTTPParserError) return brokenReply();
  const code = errorCode(error);
  if (code === undefined) return error;
  if (timeoutCodes.has(code)) return new UpstreamFailedError("timeout", "upstream did not answer in time");
  if (unreachableCodes.has(code))
    return new UpstreamFailedError("connection", "could not reach the upstream");
  if (droppedCodes.has(code))
    return new UpstreamFailedError("connection", "the connection to the upstream was closed or reset");
  if (tlsCodes.has(code) || tlsCodePrefixes.some((prefix) => code.startsWith(prefix)))
    return new UpstreamFailedError("connection", "could not make a secure connection to the upstream");
  if (malformedCodes.has(code)) return brokenReply();
  return error;
}

function brokenReply(): UpstreamFailedError {
  return new UpstreamFailedError("malformed", "upstream sent a broken reply");
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
 * response whose status is "failed". `standsForStatus`: the HTTP status the protocol says the event stands
 * for (an overload's 529), so that before any output it is retried as that status would be (C13).
 */
export function reportedFailureError(
  upstreamMessage: string | null | undefined,
  standsForStatus?: number,
): UpstreamFailedError {
  const detail = detailOf(upstreamMessage, []);
  return new UpstreamFailedError("status", `upstream reported a failure${detail}`, standsForStatus);
}

/** The upstream's message, sanitised, as the tail of ours (": …"); nothing when none is left to show. */
function detailOf(upstreamMessage: string | null | undefined, secrets: readonly string[]): string {
  const text = upstreamMessage ? sanitiseUpstreamMessage(upstreamMessage, secrets) : "";
  return text === "" ? "" : `: ${text}`;
}
