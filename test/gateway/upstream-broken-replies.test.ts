import { APIError } from "openai";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { modelFamilies } from "../../src/config";
import type { EventData } from "../../src/ledger/events";
import type { ModelFamily } from "../../src/providers/provider";
import { type Simulator, startSimulator } from "../../src/providers/simulator/simulator";
import { type FaultyUpstream, startFaultyUpstream } from "../support/faulty-upstream";
import { type GatewayHarness, startGatewayHarness } from "../support/gateway-harness";

/**
 * Upstream replies broken below the protocol (C3, C13) through the real gateway with the official openai
 * client: HTTP that does not parse, TLS that cannot be set up, and a malformed reply after a retry. Each is
 * an upstream failure the client is told of as such (500/300, what the upstream did, how many attempts),
 * and each attempt is on the request's settlement.
 */

type Settlement = { type: string; data: EventData<"UsageRecorded"> | EventData<"UsageVoided"> };

/** A chat-completions stream head, one chunk of it carrying `text`: what an upstream sends before it breaks. */
const streamHead = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
function sseChunk(text: string): string {
  const event = `data: ${JSON.stringify({
    id: "chatcmpl-upstream",
    object: "chat.completion.chunk",
    choices: [{ index: 0, delta: { role: "assistant", content: text }, finish_reason: null }],
  })}\n\n`;
  return `${Buffer.byteLength(event).toString(16)}\r\n${event}\r\n`;
}

describe("upstream replies broken below the protocol (C3, C13)", () => {
  let simulator: Simulator;
  let gamma: FaultyUpstream;
  let harness: GatewayHarness;
  let apiKey: string;

  beforeAll(async () => {
    simulator = await startSimulator({});
    gamma = await startFaultyUpstream(simulator.url);
    harness = await startGatewayHarness({
      label: "upstream_broken_replies",
      service: {
        upstreams: Object.fromEntries(
          modelFamilies.map((family) => [
            family,
            {
              // zeta speaks TLS to a server that speaks plain HTTP: no secure connection can be made.
              baseUrl:
                family === "gamma"
                  ? gamma.url
                  : family === "zeta"
                    ? gamma.url.replace("http:", "https:")
                    : simulator.url,
              apiKey: `secret-${family}`,
            },
          ]),
        ) as Record<ModelFamily, { baseUrl: string; apiKey: string }>,
        upstreamResilience: {
          limits: { attemptsMax: 3, backoffBaseMs: 5, backoffMaxMs: 20, breakerRequestsMin: 100 },
        },
      },
    });
    const session = await harness.session("broken-replies");
    apiKey = (await harness.issueKey(session)).key;
    await harness.topUp({ kind: "user", id: "broken-replies" }, "100000");
  }, 60_000);
  afterEach(() => {
    gamma.setPlan(() => ({ kind: "pass" }));
    gamma.served.length = 0;
    simulator.setFault(undefined);
  });
  afterAll(async () => {
    await harness?.close();
    await gamma?.close();
    await simulator?.close();
  });

  async function settlementOf(requestId: string): Promise<Settlement[]> {
    let events: Settlement[] = [];
    await expect
      .poll(
        async () => {
          const result = await harness.service.ledger.pool.query<{ type: string; data: Settlement["data"] }>(
            "SELECT type, data FROM ledger_events WHERE stream_id = $1 ORDER BY stream_version",
            [`usage-${requestId}`],
          );
          events = result.rows;
          return events.length;
        },
        { timeout: 30_000 },
      )
      .toBe(2);
    return events;
  }

  async function failureOf(request: Promise<unknown>): Promise<APIError> {
    const failure = await request.catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(APIError);
    return failure as APIError;
  }

  it("given an upstream whose status line does not parse, when a client asks, then 500/300 says the reply was broken and the attempt is settled as malformed", async () => {
    gamma.setPlan(() => ({ kind: "raw", writes: ["HTTP/1.1 abc Broken\r\n\r\n"] }));

    const failure = await failureOf(
      harness.openai(apiKey).chat.completions.create({
        model: "gamma-4-5",
        messages: [{ role: "user", content: "Hello" }],
      }),
    );

    expect(failure.status).toBe(500);
    expect(failure.error).toMatchObject({ code: 300 });
    expect(failure.message).toContain("upstream sent a broken reply; 1 attempt made");
    expect(gamma.served).toHaveLength(1);
    const [, voided] = await settlementOf(failure.headers!.get("x-request-id")!);
    expect(voided).toMatchObject({ type: "UsageVoided" });
    expect((voided!.data as EventData<"UsageVoided">).attempts).toEqual([
      {
        endpoint: "gamma",
        model: "gamma-4-5",
        status: null,
        error: "malformed",
        durationMs: expect.any(Number),
      },
    ]);
  });

  it("given a stream whose chunked body breaks after a delta, when a client streams, then it gets the delta, an error event saying the reply was broken, and is billed for the delta", async () => {
    gamma.setPlan(() => ({ kind: "raw", writes: [streamHead + sseChunk("Hello there"), "zz\r\n"] }));

    const { data, response } = await harness
      .openai(apiKey)
      .chat.completions.create({
        model: "gamma-4-5",
        messages: [{ role: "user", content: "Hi" }],
        stream: true,
      })
      .withResponse();
    let text = "";
    const failure = await (async () => {
      for await (const chunk of data) text += chunk.choices[0]?.delta.content ?? "";
    })().catch((error: unknown) => error);

    expect(text).toBe("Hello there");
    expect(failure).toBeInstanceOf(APIError);
    expect((failure as APIError).message).toContain("upstream sent a broken reply");
    const [, recorded] = await settlementOf(response.headers.get("x-request-id")!);
    expect(recorded).toMatchObject({
      type: "UsageRecorded",
      data: { outcome: "upstream-failed", usageSource: "estimated" },
    });
    expect((recorded!.data as EventData<"UsageRecorded">).tokens.output).toBeGreaterThan(0);
  });

  it("given an endpoint where no TLS connection can be set up, when a client asks, then each attempt is a connection failure and 500/300 says so", async () => {
    const failure = await failureOf(
      harness.openai(apiKey).chat.completions.create({
        model: "zeta-mini",
        messages: [{ role: "user", content: "Hello" }],
      }),
    );

    expect(failure.status).toBe(500);
    expect(failure.error).toMatchObject({ code: 300 });
    expect(failure.message).toContain("could not make a secure connection to the upstream; 3 attempts made");
    const [, voided] = await settlementOf(failure.headers!.get("x-request-id")!);
    expect((voided!.data as EventData<"UsageVoided">).attempts?.map((attempt) => attempt.error)).toEqual([
      "connection",
      "connection",
      "connection",
    ]);
  });

  it("given a 503 and then a reply that is not JSON, when a client asks, then 500/300 says what the upstream did and that 2 attempts were made", async () => {
    simulator.setFault({ kind: "malformed-json" });
    gamma.setPlan((index) => (index === 0 ? { kind: "status", status: 503 } : { kind: "pass" }));

    const failure = await failureOf(
      harness.openai(apiKey).chat.completions.create({
        model: "gamma-4-5",
        messages: [{ role: "user", content: "Hello" }],
      }),
    );

    expect(failure.status).toBe(500);
    expect(failure.error).toMatchObject({ code: 300 });
    expect(failure.message).toContain("upstream sent a reply that is not JSON; 2 attempts made");
    expect(gamma.served.map((served) => served.fault)).toEqual(["503", "pass"]);
  });
});
