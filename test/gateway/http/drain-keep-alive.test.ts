import { Agent, request as httpRequest } from "node:http";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type GatewayHarness, startGatewayHarness } from "../../support/gateway-harness";

/**
 * A stop drains the gateway (C11): a kept-alive client must not send its next request on a connection the
 * drain is about to close (it would be reset, and a POST is not retried). So every answer given while
 * draining says `connection: close` — the answers of requests already in flight when the drain began too.
 */

describe("keep-alive connections while the gateway drains", () => {
  let harness: GatewayHarness;
  let apiKey: string;

  beforeAll(async () => {
    // An upstream that takes a second to answer: the request is in flight when the drain begins.
    harness = await startGatewayHarness({ label: "drain_keep_alive", simulator: { latencyMs: 1_000 } });
    const session = await harness.session("drainer");
    apiKey = (await harness.issueKey(session)).key;
    await harness.topUp({ kind: "user", id: "drainer" }, "1000");
  }, 60_000);
  afterAll(async () => {
    await harness?.close();
  });

  it("given a JSON request in flight on a kept-alive connection, when the drain begins, then its answer closes the connection", async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const answered = new Promise<{ status: number; connection: string | undefined }>((resolve, reject) => {
        const outgoing = httpRequest(
          `${harness.url}/llm/v1/chat/completions`,
          {
            method: "POST",
            agent,
            headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
          },
          (incoming) => {
            incoming.resume();
            incoming.on("end", () =>
              resolve({ status: incoming.statusCode ?? 0, connection: incoming.headers.connection }),
            );
          },
        );
        outgoing.on("error", reject);
        outgoing.end(
          JSON.stringify({ model: "alpha-5.4-mini", messages: [{ role: "user", content: "Hello" }] }),
        );
      });
      // In flight: the upstream has it, and answers a second later
      await vi.waitFor(() => expect(harness.simulator.recordedRequests()).toHaveLength(1), {
        timeout: 10_000,
        interval: 20,
      });

      const draining = harness.service.drain();

      expect(await answered).toEqual({ status: 200, connection: "close" });
      await draining;
    } finally {
      agent.destroy();
    }
  });
});
