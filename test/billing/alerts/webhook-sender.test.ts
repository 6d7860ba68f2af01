import { afterEach, describe, expect, it, vi } from "vitest";
import { sendWebhook } from "../../../src/billing/alerts/webhook-sender";

/**
 * One attempt's bounds (C14, docs/api.md "Delivery"): the deadline runs from the attempt's start, the check of
 * the URL's addresses included, and a stopping worker ends it at once wherever it is. The resolver is the one
 * outside party faked here: a name server that takes its time answering (a receiver's own, say).
 */

const slowHostname = "slow-to-resolve.example";
let resolverAnswers: () => void = () => {};

vi.mock("node:dns/promises", async (importOriginal) => {
  const original = await importOriginal<typeof import("node:dns/promises")>();
  const lookup = (async (hostname: string, options?: unknown) => {
    if (hostname !== slowHostname)
      return (original.lookup as (...args: unknown[]) => unknown)(hostname, options);
    await new Promise<void>((resolve) => {
      resolverAnswers = resolve;
    });
    return [{ address: "8.8.8.8", family: 4 }];
  }) as typeof original.lookup;
  return { ...original, default: { ...original, lookup }, lookup };
});

const headers = { "webhook-id": "msg_1", "webhook-timestamp": "1", "webhook-signature": "v1,x" };

afterEach(() => resolverAnswers());

describe("one webhook attempt", () => {
  it("given a host whose name server does not answer, then the attempt fails at its deadline", async () => {
    const startedAtMs = Date.now();

    const outcome = await sendWebhook({
      url: `http://${slowHostname}/hook`,
      headers,
      body: "{}",
      allowPrivateNetworks: false,
      timeoutMs: 300,
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
    });

    expect(outcome).toEqual({ outcome: "failed", responseStatus: null, error: "stopped" });
    expect(Date.now() - startedAtMs).toBeLessThan(1_000);
  });
});
