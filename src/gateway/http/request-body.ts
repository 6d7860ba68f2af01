import type { IncomingMessage } from "node:http";
import type { Readable } from "node:stream";
import { createBrotliDecompress, createGunzip, createInflate } from "node:zlib";
import { apiErrors } from "../api-error";

/**
 * Reads a JSON request body the way `express.json()` does for the rest of the API: only JSON media types
 * are parsed, gzip, deflate and br are inflated, and the limit counts the inflated bytes. A body sent with
 * another media type, or none (`curl -d` sends form encoding), is refused with a message saying which
 * header to send (`refuseNonJsonBody`, which the express routes use too). Failures are 400/100 (C3).
 */

const jsonMediaType = /^application\/(?:[^;\s]+\+)?json\s*(?:;|$)/i;
const charsetParameter = /;\s*charset\s*=\s*"?([^";\s]+)"?/i;
/** Any character `String.prototype.trim` would keep: found at once in a body that has one, without a copy. */
const notWhitespace = /\S/;

export async function readJsonBody(request: IncomingMessage, bytesMax: number): Promise<unknown> {
  return (await readMeasuredJsonBody(request, bytesMax)).value;
}

/** The body and its size in bytes once inflated (0 when there was none): a cheap bound on its tokens. */
export interface MeasuredJsonBody {
  value: unknown;
  bytes: number;
}

const noBody: MeasuredJsonBody = { value: undefined, bytes: 0 };

export async function readMeasuredJsonBody(
  request: IncomingMessage,
  bytesMax: number,
): Promise<MeasuredJsonBody> {
  // NaN without the header: then only a chunked body (transfer-encoding) has one.
  const declaredBytes = Number(request.headers["content-length"]);
  if (!hasBody(request)) return noBody;
  refuseNonJsonBody(request);
  const contentType = request.headers["content-type"] ?? "";
  const charset = charsetParameter.exec(contentType)?.[1]?.toLowerCase();
  if (charset !== undefined && charset !== "utf-8" && charset !== "utf8")
    throw apiErrors.validation("Unsupported request body encoding");
  if (declaredBytes > bytesMax) throw tooLarge();
  const { text, bytes } = await readText(request, decoded(request), bytesMax);
  if (!notWhitespace.test(text)) return noBody;
  try {
    return { value: JSON.parse(text) as unknown, bytes };
  } catch {
    throw apiErrors.validation("Request body is not valid JSON");
  }
}

/** Whether the request carries a body: a positive Content-Length, or a chunked one. */
export function hasBody(request: IncomingMessage): boolean {
  return Number(request.headers["content-length"]) > 0 || request.headers["transfer-encoding"] !== undefined;
}

/** A body whose media type is not JSON is refused, saying what to send instead. */
export function refuseNonJsonBody(request: IncomingMessage): void {
  const contentType = request.headers["content-type"];
  if (contentType && jsonMediaType.test(contentType)) return;
  throw apiErrors.validation(
    `The request body must be JSON sent with the header Content-Type: application/json (it came as ${
      contentType ? contentType.split(";")[0]!.trim() : "no Content-Type"
    }; with curl add -H "Content-Type: application/json")`,
  );
}

function decoded(request: IncomingMessage): Readable {
  const encoding = (request.headers["content-encoding"] ?? "identity").toLowerCase();
  switch (encoding) {
    case "identity":
      return request;
    case "gzip":
      return request.pipe(createGunzip());
    case "deflate":
      return request.pipe(createInflate());
    case "br":
      return request.pipe(createBrotliDecompress());
    default:
      throw apiErrors.validation("Unsupported request body encoding");
  }
}

/**
 * Stops at the limit without destroying the request: Node reads and discards the rest after the reply, so
 * the client still reads its 400 and the connection stays usable for its next request.
 */
function readText(
  request: IncomingMessage,
  body: Readable,
  bytesMax: number,
): Promise<{ text: string; bytes: number }> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let bytes = 0;
    const stop = (error: Error) => {
      body.removeAllListeners("data");
      body.removeAllListeners("end");
      if (body !== request) {
        request.unpipe();
        body.destroy();
      }
      reject(error);
    };
    body.on("data", (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes > bytesMax) stop(tooLarge());
      else chunks.push(chunk);
    });
    body.once("end", () => {
      // Most bodies arrive in one chunk, decoded where it lies.
      const whole = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, bytes);
      resolve({ text: whole.toString("utf8"), bytes });
    });
    body.once("error", () => stop(apiErrors.validation("Malformed request body")));
    // A client that goes away mid-upload may not error the stream; it does close it.
    request.once("close", () => {
      if (!request.complete) stop(apiErrors.validation("Request body ended early"));
    });
  });
}

function tooLarge(): Error {
  return apiErrors.validation("Request body is too large");
}
