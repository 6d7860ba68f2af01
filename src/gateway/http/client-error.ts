import type { Duplex } from "node:stream";
import { apiErrors, errorBodyOf } from "../api-error";
import { newRequestId } from "../middleware/request-id";

/**
 * A request node:http refuses before any handler sees it — headers over the parser's limit (a 1 MB query
 * string), a malformed request line — answered with the error body like every other bad request (400/100,
 * C3, as a body over the limit is) instead of node's bare status line; headers that never finished arriving
 * keep node's 408, with the error body. The connection is closed after it: the parser cannot resume.
 */
export function answerClientError(error: Error & { code?: string }, socket: Duplex): void {
  // Gone, or an answer already started on this connection (node's own check): nothing can be said any more.
  const response = (socket as { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (!socket.writable || response?.headersSent || error.code === "ECONNRESET") {
    socket.destroy();
    return;
  }
  const timedOut = error.code === "ERR_HTTP_REQUEST_TIMEOUT";
  const body = JSON.stringify(errorBodyOf(apiErrors.validation(messageOf(error.code))));
  socket.end(
    [
      timedOut ? "HTTP/1.1 408 Request Timeout" : "HTTP/1.1 400 Bad Request",
      "content-type: application/json; charset=utf-8",
      `content-length: ${Buffer.byteLength(body)}`,
      `x-request-id: ${newRequestId()}`,
      "connection: close",
      "",
      body,
    ].join("\r\n"),
  );
}

function messageOf(code: string | undefined): string {
  switch (code) {
    case "HPE_HEADER_OVERFLOW":
      return "Request headers are too large (the query string counts)";
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return "The request's headers took too long to arrive";
    default:
      return "Malformed HTTP request";
  }
}
