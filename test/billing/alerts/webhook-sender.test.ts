import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { type HostLookup, systemHostLookup } from "../../../src/billing/alerts/webhook-address";
import { sendWebhook } from "../../../src/billing/alerts/webhook-sender";

/**
 * One attempt's bounds (C14, docs/api.md "Delivery"): the deadline runs from the attempt's start, the check of
 * the URL's addresses included, each look-up of the host gives up sooner at a bound of its own, saying so, and a
 * stopping worker ends it at once wherever it is; and where it may go: a
 * name that answers a public address to the check and a private one to the connection (DNS rebinding) is not
 * reached, nor is a private address a receiver redirects to. The resolver is the one outside party faked
 * here: a name server that takes its time answering (a receiver's own, say), or that changes its answer.
 */

const slowHostname = "slow-to-resolve.example";
/** Look-ups of the slow name waiting for their answer, each given one after its test. */
const unanswered: (() => void)[] = [];
/** Public to the check's look-up, loopback to the connection's. */
const rebindingHostname = "rebinding.example";
let rebindingLookups = 0;

/** The name server the attempts ask; any other name goes to the system's resolver. */
const nameServer: HostLookup = async (hostname) => {
  if (hostname === rebindingHostname)
    return rebindingLookups++ === 0
      ? [{ address: "8.8.8.8", family: 4 }]
      : [{ address: "127.0.0.1", family: 4 }];
  if (hostname !== slowHostname) return systemHostLookup(hostname);
  await new Promise<void>((resolve) => unanswered.push(resolve));
  return [{ address: "8.8.8.8", family: 4 }];
};

const headers = { "webhook-id": "msg_1", "webhook-timestamp": "1", "webhook-signature": "v1,x" };

afterEach(() => {
  for (const answer of unanswered.splice(0)) answer();
});

describe("one webhook attempt", () => {
  it.each([
    ["the check of its addresses", false],
    ["the connection", true],
  ])(
    "given a host whose name server never answers, then %s gives up at the look-up's bound, saying so, long before the attempt's deadline",
    async (_step, allowPrivateNetworks) => {
      const startedAtMs = Date.now();

      const outcome = await sendWebhook({
        url: `http://${slowHostname}/hook`,
        headers,
        body: "{}",
        allowPrivateNetworks,
        timeoutMs: 10_000,
        hostResolutionTimeoutMs: 300,
        lookupHost: nameServer,
      });

      expect(outcome).toEqual({
        outcome: "failed",
        responseStatus: null,
        error: `url's host ${slowHostname} did not resolve within 300 ms`,
      });
      expect(Date.now() - startedAtMs).toBeLessThan(1_000);
    },
    15_000,
  );

  it("given a host whose name server does not answer, and a deadline shorter than the look-up's bound, then the attempt fails at its deadline", async () => {
    const startedAtMs = Date.now();

    const outcome = await sendWebhook({
      url: `http://${slowHostname}/hook`,
      headers,
      body: "{}",
      allowPrivateNetworks: false,
      timeoutMs: 300,
      hostResolutionTimeoutMs: 5_000,
      lookupHost: nameServer,
    });

    expect(outcome).toEqual({ outcome: "failed", responseStatus: null, error: "no answer within 300 ms" });
    expect(Date.now() - startedAtMs).toBeLessThan(1_000);
  });

  it("given an attempt waiting for its host's addresses, when its worker stops, then it ends at once", async () => {
    const stopping = new AbortController();
    const startedAtMs = Date.now();
    setTimeout(() => stopping.abort(), 100);

    const outcome = await sendWebhook({
      url: `http://${slowHostname}/hook`,
      headers,
      body: "{}",
      allowPrivateNetworks: false,
      timeoutMs: 10_000,
      signal: stopping.signal,
      lookupHost: nameServer,
    });

    expect(outcome).toEqual({ outcome: "failed", responseStatus: null, error: "stopped" });
    expect(Date.now() - startedAtMs).toBeLessThan(1_000);
  });

  it("given a name that moves to a loopback address after the check, then the connection is refused and nothing is sent", async () => {
    const receiver = await listening((_request, response) => response.writeHead(204).end());

    const outcome = await sendWebhook({
      url: `http://${rebindingHostname}:${receiver.port}/hook`,
      headers,
      body: "{}",
      allowPrivateNetworks: false,
      timeoutMs: 5_000,
      lookupHost: nameServer,
    });

    expect(outcome).toEqual({
      outcome: "failed",
      responseStatus: null,
      error: `${rebindingHostname} resolves only to private addresses`,
    });
    expect(rebindingLookups).toBe(2);
    expect(receiver.requests()).toBe(0);
    await receiver.close();
  });

  it("given a receiver that redirects, then the attempt fails with its status and the redirect is not followed", async () => {
    const target = await listening((_request, response) => response.writeHead(204).end());
    const redirecting = await listening((_request, response) =>
      response.writeHead(307, { location: `http://127.0.0.1:${target.port}/hook` }).end(),
    );

    const outcome = await sendWebhook({
      url: `http://127.0.0.1:${redirecting.port}/hook`,
      headers,
      body: "{}",
      allowPrivateNetworks: true,
      timeoutMs: 5_000,
    });

    expect(outcome).toEqual({ outcome: "failed", responseStatus: 307, error: "receiver answered 307" });
    expect(target.requests()).toBe(0);
    await target.close();
    await redirecting.close();
  });
});

/** A receiver on 127.0.0.1 counting the requests that reach it. */
async function listening(answer: Parameters<typeof createServer>[1] & {}) {
  let count = 0;
  const server: Server = createServer((request, response) => {
    count += 1;
    request.resume();
    answer!(request, response);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as AddressInfo).port,
    requests: () => count,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
