import { type Dispatcher, Pool } from "undici";
import { upstreamLimits, upstreamTimeoutDefaults } from "../../kernel/limits";
import { UpstreamFailedError } from "../provider";
import { retryAfterMsOf } from "./retry-after";
import { parseServerSentEvents, type ServerSentEvent } from "./server-sent-events";
import { mapTransportError, statusError } from "./transport-errors";
import { redactSecrets } from "./upstream-error-message";
import { parseUpstreamJson } from "./upstream-reply";
import type { UpstreamTimeouts } from "./upstream-timeouts";

export interface UpstreamHttpClientOptions {
  /** Prefix the protocol's paths are appended to, e.g. "https://upstream.example/v1" (C5). */
  baseUrl: string;
  /** Sent with every request; their values are treated as secrets and never appear in an error message. */
  credentialHeaders: Readonly<Record<string, string>>;
  /** Protocol headers that are not secret, e.g. a version header. */
  protocolHeaders?: Readonly<Record<string, string>>;
  timeouts?: Partial<UpstreamTimeouts>;
  connectionsMax: number;
}

/**
 * POSTs JSON to one upstream over its own keep-alive pool (never the global dispatcher, so one upstream's
 * limits and timeouts do not leak into another's) and maps every transport outcome to the contract's errors.
 */
export class UpstreamHttpClient {
  private readonly pool: Pool;
  private readonly pathPrefix: string;
  private readonly headers: Readonly<Record<string, string>>;
  private readonly secrets: readonly string[];

  constructor(options: UpstreamHttpClientOptions) {
    const baseUrl = new URL(options.baseUrl);
    const timeouts = { ...upstreamTimeoutDefaults, ...options.timeouts };
    this.pool = new Pool(baseUrl.origin, {
      connections: options.connectionsMax,
      connect: { timeout: timeouts.connectTimeoutMs },
      headersTimeout: timeouts.headersTimeoutMs,
      bodyTimeout: timeouts.bodyTimeoutMs,
      keepAliveTimeout: timeouts.keepAliveTimeoutMs,
      keepAliveMaxTimeout: timeouts.keepAliveTimeoutMs,
    });
    this.pathPrefix = baseUrl.pathname.replace(/\/+$/, "");
    this.headers = { ...options.protocolHeaders, ...options.credentialHeaders };
    this.secrets = Object.values(options.credentialHeaders).flatMap(secretForms);
  }

  /** POSTs a JSON body and returns the parsed JSON reply (unvalidated: the adapter owns the schema). */
  async postJson(path: string, body: unknown, signal: AbortSignal): Promise<unknown> {
    const response = await this.send(path, body, "application/json", signal);
    let text: string;
    try {
      text = await readBodyText(response.body, upstreamLimits.replyBytesMax);
    } catch (error) {
      throw mapTransportError(error, signal);
    }
    return parseUpstreamJson(text);
  }

  /**
   * POSTs a JSON body and yields the reply's server-sent events, those of one read together. Stopping the iteration early (or aborting
   * `signal`) destroys the body, which closes the socket and so tells the upstream to stop generating.
   */
  async *postEventStream(
    path: string,
    body: unknown,
    signal: AbortSignal,
  ): AsyncGenerator<ServerSentEvent[]> {
    const response = await this.send(path, body, "text/event-stream", signal);
    try {
      yield* parseServerSentEvents(response.body);
    } catch (error) {
      throw mapTransportError(error, signal);
    } finally {
      // The body iterator's own return() destroys it too; done here as well so that closing the upstream
      // connection does not depend on how deep the generator delegation goes.
      if (!response.body.readableEnded) response.body.destroy();
    }
  }

  /**
   * The parts of a stream, a failure the upstream reported in it (in its own words) rid of our credentials,
   * which the conversion that read those words does not know (C3). Stopping early stops `parts`.
   */
  async *withoutCredentials<T>(parts: AsyncIterable<T>): AsyncGenerator<T> {
    try {
      yield* parts;
    } catch (error) {
      throw this.credentialsRedacted(error);
    }
  }

  /** A failure the upstream reported inside a 200, its words rid of our credentials (C3). */
  credentialsRedacted(error: unknown): unknown {
    if (!(error instanceof UpstreamFailedError)) return error;
    const message = redactSecrets(error.message, this.secrets);
    if (message === error.message) return error;
    return new UpstreamFailedError(
      error.reason,
      message,
      error.upstreamStatus,
      error.retryAfterSeconds,
      error.retryAfterMs,
    );
  }

  async close(): Promise<void> {
    await this.pool.close();
  }

  private async send(
    path: string,
    body: unknown,
    accept: string,
    signal: AbortSignal,
  ): Promise<Dispatcher.ResponseData> {
    let response: Dispatcher.ResponseData;
    try {
      response = await this.pool.request({
        path: this.pathPrefix + path,
        method: "POST",
        headers: { ...this.headers, "content-type": "application/json", accept },
        body: JSON.stringify(body),
        signal,
      });
    } catch (error) {
      throw mapTransportError(error, signal);
    }
    if (response.statusCode >= 200 && response.statusCode < 300) return response;
    let bodyText = "";
    try {
      bodyText = await readBodyText(response.body, upstreamLimits.errorBodyBytesMax, { truncate: true });
    } catch (error) {
      // The status alone says enough; only a cancellation by our caller takes precedence over it.
      if (signal.aborted) throw mapTransportError(error, signal);
    }
    throw statusError(response.statusCode, bodyText, this.secrets, retryAfterMsOf(response.headers));
  }
}

/**
 * Resolves once the upstream requests made in the current turn of the event loop have been written:
 * undici writes a request on a kept-alive connection in the check phase of the turn it was made in (after
 * looking at the idle socket, GHSA-35p6-xmwp-9g52), and this resolves in the next turn's check phase,
 * whether it was asked for before or after the request. A request on a new connection leaves once
 * connected, which may be later.
 */
export function upstreamRequestsOfThisTurnWritten(): Promise<void> {
  return new Promise((resolve) => setImmediate(() => setImmediate(resolve)));
}

/** A key may be echoed bare or with its scheme ("Bearer …"); redact the bare value either way. */
function secretForms(headerValue: string): string[] {
  const bare = headerValue.replace(/^Bearer\s+/i, "");
  return bare.length > 0 ? [bare] : [];
}

/**
 * Reads a body up to `bytesMax`. A success body over the limit is malformed; an error body is only cut,
 * since its first kilobytes hold the message.
 */
async function readBodyText(
  body: Dispatcher.ResponseData["body"],
  bytesMax: number,
  options: { truncate: boolean } = { truncate: false },
): Promise<string> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    bytes += chunk.length;
    if (bytes > bytesMax) {
      body.destroy();
      if (options.truncate) break;
      throw new UpstreamFailedError("malformed", "upstream reply is larger than the gateway accepts");
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString("utf8");
}
