import type { Duplex } from "node:stream";
import { apiErrors, errorBodyOf } from "../api-error";
import { newRequestId } from "../middleware/request-id";

/**
 * A request node:http refuses before any handler sees it — headers over the parser's limit (a 100 KB
 * Authorization header, a 1 MB query string), a malformed request line — answered with the error body
 * (application status 100, C3) instead of node's bare status line: 431 for headers too large, 400 for a
 * request it cannot parse, node's 408 for headers that never finished arriving. The connection is closed
 * after it: the parser cannot resume.
 */
export function answerClientError(error: Error & { code?: string }, socket: Duplex): void {
  // Gone, or an answer already started on this connection (node's own check): nothing can be said any more.
  const response = (socket as { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (!socket.writable || response?.headersSent || error.code === "ECONNRESET") {
    socket.destroy();
    return;
  }
  const body = JSON.stringify(errorBodyOf(apiErrors.validation(messageOf(error.code))));
  socket.end(
    [
      statusLineOf(error.code),
      "content-type: application/json; charset=utf-8",
      `content-length: ${Buffer.byteLength(body)}`,
      `x-request-id: ${newRequestId()}`,
      "connection: close",
      "",
      body,
    ].join("\r\n"),
  );
}

/** Headers over the parser's limit are 431 (RFC 6585), whichever header (or the URL) overflowed it. */
function statusLineOf(code: string | undefined): string {
  switch (code) {
    case "HPE_HEADER_OVERFLOW":
      return "HTTP/1.1 431 Request Header Fields Too Large";
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return "HTTP/1.1 408 Request Timeout";
    default:
      return "HTTP/1.1 400 Bad Request";
  }
}

function messageOf(code: string | undefined): string {
  switch (code) {
    case "HPE_HEADER_OVERFLOW":
      return "Request headers are too large: together, the headers and the URL (its query string too) must fit in 16 KB";
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return "The request's headers took too long to arrive";
    default:
      return "Malformed HTTP request";
  }
}
