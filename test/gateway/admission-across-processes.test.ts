import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningService, startService } from "../../src/service";
import { type GatewayHarness, serviceOptionsOf, startGatewayHarness } from "../support/gateway-harness";
import { eventually } from "../workers/queue-test-support";

/**
 * Admission reads a per-process copy of the active keys and balances (admission-cache.ts). In the process
 * that made a change, the next request sees it (C4). A second gateway process on the same ledger (an edge
 * that does not run the projections) sees it once the projection's NOTIFY reaches it — no restart, no
 * waiting for an expiry.
 */

const chat = JSON.stringify({ model: "gamma-4-5", messages: [{ role: "user", content: "Hi" }] });

async function statusOf(baseUrl: string, key: string): Promise<number> {
  const reply = await fetch(`${baseUrl}/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: chat,
  });
  await reply.arrayBuffer();
  return reply.status;
}

describe("admission across gateway processes", () => {
  let first: GatewayHarness;
  let second: RunningService;
  let secondBaseUrl: string;

  beforeAll(async () => {
    first = await startGatewayHarness({ label: "admission_processes" });
    second = await startService(
      serviceOptionsOf(first.database.url, {
        upstreamUrl: first.simulator.url,
        // As `--role=gateway`: the first process runs the projections, this one only reads them.
        runProjections: false,
      }),
    );
    secondBaseUrl = `${(await second.listen(0, "127.0.0.1")).url}/llm/v1`;
  });

  afterAll(async () => {
    await second?.close();
    await first?.close();
  });

  it("refuses a key on the next request of the process that deactivated it, even a key it had cached", async () => {
    const dave = await first.session("dave");
    await first.topUp({ kind: "user", id: "dave" }, "10");
    const issued = await first.issueKey(dave);
    expect(await statusOf(first.baseUrl, issued.key)).toBe(200);

    const patched = await fetch(`${first.url}/llm/apis/${issued.uuid}/status`, {
      method: "PATCH",
      headers: { authorization: `Bearer ${dave}`, "content-type": "application/json" },
      body: JSON.stringify({ status: 0 }),
    });
    expect(patched.status).toBe(200);

    expect(await statusOf(first.baseUrl, issued.key)).toBe(401);
  });

  it("lets another process see a deactivation, a reactivation and a top-up without a restart", async () => {
    const erin = await first.session("erin");
    const issued = await first.issueKey(erin);
    // Cached by the second process as "no credit".
    expect(await statusOf(secondBaseUrl, issued.key)).toBe(400);

    await first.topUp({ kind: "user", id: "erin" }, "10");
    await eventually(
      "the second process sees the top-up",
      async () => {
        return (await statusOf(secondBaseUrl, issued.key)) === 200;
      },
      5_000,
    );

    const setStatus = (status: 0 | 1) =>
      fetch(`${first.url}/llm/apis/${issued.uuid}/status`, {
        method: "PATCH",
        headers: { authorization: `Bearer ${erin}`, "content-type": "application/json" },
        body: JSON.stringify({ status }),
      });
    expect((await setStatus(0)).status).toBe(200);
    await eventually(
      "the second process refuses the deactivated key",
      async () => {
        return (await statusOf(secondBaseUrl, issued.key)) === 401;
      },
      5_000,
    );

    expect((await setStatus(1)).status).toBe(200);
    await eventually(
      "the second process admits the reactivated key",
      async () => {
        return (await statusOf(secondBaseUrl, issued.key)) === 200;
      },
      5_000,
    );
  });
});
