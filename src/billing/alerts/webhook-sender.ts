import type { LookupAddress } from "node:dns";
import http from "node:http";
import https from "node:https";
import type { LookupFunction } from "node:net";
import { webhookLimits } from "../../kernel/limits";
import { retryAfterMsOf } from "../../providers/http/retry-after";
import {
  assertDeliverableUrl,
  defaultHostResolution,
  type HostLookup,
  type HostResolution,
  isPrivateAddress,
  resolveHost,
} from "./webhook-address";
import type { SignedHeaders } from "./webhook-signing";

/**
 * One attempt at sending a signed message: a POST of the body with its three headers, bounded in time and in
 * the bytes of the answer read. The URL is checked again here (C14), and the connection itself goes only to an
 * address the check allows (the lookup that connects refuses a private one), so a name that moved to a
 * private address between the check and the connection is refused too.
 */

export type AttemptOutcome =
  | { outcome: "delivered"; responseStatus: number }
  | {
      outcome: "failed";
      responseStatus: number | null;
      error: string;
      /** The receiver's `Retry-After` (a 429 or 503, say): how long it asked us to wait, at most an hour. */
      retryAfterMs?: number;
    };

function guardedLookup(allowPrivateNetworks: boolean, resolution: HostResolution): LookupFunction {
  return (hostname, options, callback) => {
    const family = options.family === 4 || options.family === 6 ? options.family : undefined;
    resolveHost(hostname, resolution).then(
      (addresses) => {
        const allowed = addresses.filter(
          (entry) =>
            (family === undefined || entry.family === family) &&
            (allowPrivateNetworks || !isPrivateAddress(entry.address)),
        );
        const first = allowed[0];
        if (!first) return callback(new Error(`${hostname} resolves only to private addresses`), "", 0);
        if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, allowed);
        callback(null, first.address, first.family);
      },
      (error: NodeJS.ErrnoException) => callback(error, "", 0),
    );
  };
}

/**
 * The attempt ends `timeoutMs` after it starts, whatever the receiver or its name server does: a socket's idle
 * timeout alone would let a receiver that drips a byte of its answer now and then hold the attempt for hours.
 * Each look-up of the host (the check's, the connection's) gives up sooner, at `hostResolutionTimeoutMs`, and
 * says so: a name server the receiver may run holds the attempt no longer, and its record tells a silent name
 * server from a silent receiver. Once the status line has come, the deadline judges the attempt by it; before,
 * the attempt failed.
 */
export function sendWebhook(input: {
  url: string;
  headers: SignedHeaders;
  body: string;
  allowPrivateNetworks: boolean;
  timeoutMs?: number;
  /** How long the check of the host's addresses, and the connection's look-up, each wait for them. */
  hostResolutionTimeoutMs?: number;
  /** Where the host's addresses come from: the system's resolver unless a test gives a name server. */
  lookupHost?: HostLookup;
  /** Aborted: the attempt ends at once as failed ("stopped"), e.g. when its worker stops. */
  signal?: AbortSignal;
}): Promise<AttemptOutcome> {
  const timeoutMs = input.timeoutMs ?? webhookLimits.deliveryTimeoutMs;
  const resolution: HostResolution = {
    lookupHost: input.lookupHost ?? defaultHostResolution.lookupHost,
    timeoutMs: input.hostResolutionTimeoutMs ?? defaultHostResolution.timeoutMs,
  };
  return new Promise((resolve) => {
    let status: number | undefined;
    let retryAfterMs: number | undefined;
    let request: http.ClientRequest | undefined;
    let settled = false;
    const settle = (outcome: AttemptOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      input.signal?.removeEventListener("abort", onAbort);
      request?.destroy();
      resolve(outcome);
    };
    const byStatus = (): AttemptOutcome =>
      status! >= 200 && status! < 300
        ? { outcome: "delivered", responseStatus: status! }
        : {
            outcome: "failed",
            responseStatus: status!,
            error: `receiver answered ${status}`,
            ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
          };
    const deadline = setTimeout(
      () =>
        settle(
          status === undefined
            ? { outcome: "failed", responseStatus: null, error: `no answer within ${timeoutMs} ms` }
            : byStatus(),
        ),
      timeoutMs,
    );
    const onAbort = () => settle({ outcome: "failed", responseStatus: null, error: "stopped" });
    if (input.signal?.aborted) onAbort();
    else input.signal?.addEventListener("abort", onAbort, { once: true });
    const post = (url: URL) => {
      // Ended while the addresses were checked: nothing is sent.
      if (settled) return;
      const client = url.protocol === "https:" ? https : http;
      request = client.request(
        url,
        {
          method: "POST",
          headers: {
            ...input.headers,
            "content-type": "application/json",
            "content-length": Buffer.byteLength(input.body),
            "user-agent": "won-gateway-webhooks",
          },
          lookup: guardedLookup(input.allowPrivateNetworks, resolution),
        },
        (response) => {
          let bytes = 0;
          status = response.statusCode ?? 0;
          retryAfterMs = retryAfterMsOf(response.headers);
          response.on("data", (chunk: Buffer) => {
            bytes += chunk.length;
            if (bytes > webhookLimits.responseBytesMax) settle(byStatus());
          });
          response.on("end", () => settle(byStatus()));
          response.on("error", () => settle(byStatus()));
        },
      );
      request.on("error", (error) =>
        settle({ outcome: "failed", responseStatus: null, error: error.message }),
      );
      request.end(input.body);
    };
    assertDeliverableUrl(input.url, input.allowPrivateNetworks, resolution).then(post, (error: Error) =>
      settle({ outcome: "failed", responseStatus: null, error: error.message }),
    );
  });
}
