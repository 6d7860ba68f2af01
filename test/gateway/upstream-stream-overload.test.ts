import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { modelFamilies } from "../../src/config";
import type { EventData } from "../../src/ledger/events";
import type { ModelFamily } from "../../src/providers/provider";
import { type Simulator, startSimulator } from "../../src/providers/simulator/simulator";
import { type FaultyUpstream, startFaultyUpstream } from "../support/faulty-upstream";
import { type GatewayHarness, startGatewayHarness } from "../support/gateway-harness";

/**
 * A stream the upstream opens with 200 and then fails, before any output, with an error event naming an
 * overload or a server error: the streaming form of a 529 or a 5xx (the messages protocol's
 * `overloaded_error`, generateContent's `error.code`). Nothing reached the client, so C13 retries it as
 * that status, through the real gateway and the official openai client.
 */

/** A 200 event stream holding only `event`, then its end: what an overloaded upstream sends. */
function streamOf(event: string): string {
  return [
    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n",
    `${Buffer.byteLength(event).toString(16)}\r\n${event}\r\n`,
    "0\r\n\r\n",
  ].join("");
}

const messagesOverloaded = streamOf(
  'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n',
);
const generateContentUnavailable = streamOf(
  'data: {"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}\n\n',
);

describe("an upstream stream failing before any output with an overload event (C13)", () => {
  let simulator: Simulator;
  let faulty: FaultyUpstream;
  let harness: GatewayHarness;
  let apiKey: string;

  beforeAll(async () => {
    simulator = await startSimulator({});
    faulty = await startFaultyUpstream(simulator.url);
    harness = await startGatewayHarness({
      label: "upstream_stream_overload",
      service: {
        upstreams: Object.fromEntries(
          modelFamilies.map((family) => [
            family,
            {
              baseUrl: family === "delta" || family === "beta" ? faulty.url : simulator.url,
              apiKey: `secret-${family}`,
            },
          ]),
        ) as Record<ModelFamily, { baseUrl: string; apiKey: string }>,
        upstreamResilience: { limits: { backoffBaseMs: 5, backoffMaxMs: 20 } },
      },
    });
    const session = await harness.session("overloaded");
    apiKey = (await harness.issueKey(session)).key;
    await harness.topUp({ kind: "user", id: "overloaded" }, "100000");
  }, 60_000);
  afterEach(() => {
    faulty.setPlan(() => ({ kind: "pass" }));
    faulty.served.length = 0;
  });
  afterAll(async () => {
    await harness?.close();
    await faulty?.close();
    await simulator?.close();
  });

  async function attemptsOf(requestId: string): Promise<EventData<"UsageRecorded">["attempts"]> {
    let recorded: EventData<"UsageRecorded"> | undefined;
    await expect
      .poll(
        async () => {
          const result = await harness.service.ledger.pool.query<{ data: EventData<"UsageRecorded"> }>(
            "SELECT data FROM ledger_events WHERE stream_id = $1 AND type = 'UsageRecorded'",
            [`usage-${requestId}`],
          );
          recorded = result.rows[0]?.data;
          return recorded !== undefined;
        },
        { timeout: 30_000 },
      )
      .toBe(true);
    return recorded!.attempts;
  }

  it.each([
    ["delta-4.5-haiku", "messages `overloaded_error`", messagesOverloaded, 529],
    ["beta-3-flash", "generateContent `error.code` 503", generateContentUnavailable, 503],
  ])(
    "given %s whose first stream fails with %s, when a client streams, then the retry answers it whole and the settlement records both attempts",
    async (model, _failure, firstReply, standsFor) => {
      faulty.setPlan((index) => (index === 0 ? { kind: "raw", writes: [firstReply] } : { kind: "pass" }));

      const { data, response } = await harness
        .openai(apiKey)
        .chat.completions.create({
          model,
          messages: [{ role: "user", content: "Tell me about overloads" }],
          stream: true,
          stream_options: { include_usage: true },
        })
        .withResponse();
      let text = "";
      let usage: unknown;
      for await (const chunk of data) {
        text += chunk.choices[0]?.delta.content ?? "";
        usage ??= chunk.usage ?? undefined;
      }

      expect(text.length).toBeGreaterThan(0);
      expect(usage).toMatchObject({ completion_tokens: expect.any(Number) });
      expect(faulty.served.map((served) => served.fault)).toEqual(["raw", "pass"]);
      const attempts = await attemptsOf(response.headers.get("x-request-id")!);
      expect(attempts?.map(({ status, error }) => ({ status, error }))).toEqual([
        { status: standsFor, error: "status" },
        { status: 200, error: null },
      ]);
    },
  );
});
