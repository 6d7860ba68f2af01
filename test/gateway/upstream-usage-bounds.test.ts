import OpenAI from "openai";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { modelFamilies } from "../../src/config";
import { chargeLimits } from "../../src/kernel/limits";
import type { EventData } from "../../src/ledger/events";
import type { ModelFamily } from "../../src/providers/provider";
import { type Simulator, startSimulator } from "../../src/providers/simulator/simulator";
import { capturedLog } from "../support/captured-log";
import { type FaultyUpstream, startFaultyUpstream } from "../support/faulty-upstream";
import { type GatewayHarness, startGatewayHarness } from "../support/gateway-harness";

/**
 * Usage counts an upstream reports that cannot be billed as they stand (C3, C7, C10), in each upstream
 * protocol, JSON and streamed, through the real gateway, its ledger and its reconciler, with the official
 * openai client: an upstream that serves raw replies. A complete JSON answer with such a usage is a
 * malformed reply (500/300, its hold voided, nothing billed); a stream that delivered output before it is
 * billed what it delivered, the gateway counting what the upstream's usage could not tell; running totals
 * that go down keep the highest count the upstream reported.
 */

const tooMany = chargeLimits.tokensPerRequestMax + 1;
const credit = "1000";

/** "Hi" as the gateway counts it (3 per message, 3 for the reply, 1 for the word) and "Hello there". */
const estimatedInput = 7;
const countedOutput = 2;

function jsonReply(body: object): string[] {
  const text = JSON.stringify(body);
  return [
    `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(text)}\r\nconnection: close\r\n\r\n${text}`,
  ];
}

const streamHead =
  "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n";
function chunkOf(events: string): string {
  return `${Buffer.byteLength(events).toString(16)}\r\n${events}\r\n`;
}
/** Each event its own write, a moment apart: the first reaches the client before the next is read. */
function streamReply(events: readonly string[]): string[] {
  return events.map((event, index) => (index === 0 ? streamHead : "") + chunkOf(event)).concat("0\r\n\r\n");
}
const data = (payload: object) => `data: ${JSON.stringify(payload)}\n\n`;
const named = (type: string, payload: object) =>
  `event: ${type}\ndata: ${JSON.stringify({ type, ...payload })}\n\n`;

/** One generateContent stream chunk: a piece of text with the running usage, and the finish on the last. */
const generateContentChunk = (text: string, usageMetadata: object, finishReason?: string) =>
  data({
    candidates: [
      { content: { role: "model", parts: [{ text }] }, ...(finishReason ? { finishReason } : {}) },
    ],
    usageMetadata,
  });

/** One complete JSON answer, "Hello there", with this usage, per upstream protocol. */
const jsonAnswers = {
  "chat-completions": (usage: object) =>
    jsonReply({
      id: "chatcmpl-upstream",
      object: "chat.completion",
      choices: [{ index: 0, message: { role: "assistant", content: "Hello there" }, finish_reason: "stop" }],
      usage,
    }),
  responses: (usage: object) =>
    jsonReply({
      id: "resp_upstream",
      object: "response",
      status: "completed",
      output: [{ type: "message", content: [{ type: "output_text", text: "Hello there" }] }],
      usage,
    }),
  messages: (usage: object) =>
    jsonReply({
      id: "msg_upstream",
      type: "message",
      role: "assistant",
      content: [{ type: "text", text: "Hello there" }],
      stop_reason: "end_turn",
      usage,
    }),
  "generate-content": (usage: object) =>
    jsonReply({
      candidates: [{ content: { role: "model", parts: [{ text: "Hello there" }] }, finishReason: "STOP" }],
      usageMetadata: usage,
    }),
};

const modelOf = {
  "chat-completions": "gamma-4-5",
  responses: "alpha-5.4-pro",
  messages: "delta-4.5-haiku",
  "generate-content": "beta-3-flash",
} as const;

/** Usages no ledger can take as they stand, in each protocol's own fields. */
const unusableJsonUsages: [keyof typeof jsonAnswers, string, object][] = [
  ["chat-completions", "a negative count", { prompt_tokens: -1, completion_tokens: 2 }],
  ["chat-completions", "a count that is not whole", { prompt_tokens: 10, completion_tokens: 2.5 }],
  ["chat-completions", "a count that is a string", { prompt_tokens: "10", completion_tokens: 2 }],
  ["chat-completions", "a count above the bound", { prompt_tokens: tooMany, completion_tokens: 2 }],
  [
    "chat-completions",
    "cached above input",
    { prompt_tokens: 10, completion_tokens: 2, prompt_tokens_details: { cached_tokens: 11 } },
  ],
  [
    "chat-completions",
    "reasoning above output",
    { prompt_tokens: 10, completion_tokens: 2, completion_tokens_details: { reasoning_tokens: 3 } },
  ],
  ["responses", "a count above the bound", { input_tokens: 10, output_tokens: tooMany }],
  [
    "responses",
    "cached above input",
    { input_tokens: 10, output_tokens: 2, input_tokens_details: { cached_tokens: 11 } },
  ],
  [
    "responses",
    "reasoning above output",
    { input_tokens: 10, output_tokens: 2, output_tokens_details: { reasoning_tokens: 3 } },
  ],
  ["messages", "a negative count", { input_tokens: 10, output_tokens: -2 }],
  [
    "messages",
    "an input whose parts add up above the bound",
    {
      input_tokens: chargeLimits.tokensPerRequestMax,
      cache_read_input_tokens: 1,
      cache_creation_input_tokens: 0,
      output_tokens: 2,
    },
  ],
  [
    "messages",
    "reasoning above output",
    { input_tokens: 10, output_tokens: 2, output_tokens_details: { thinking_tokens: 3 } },
  ],
  ["generate-content", "a count above the bound", { promptTokenCount: tooMany, candidatesTokenCount: 2 }],
  [
    "generate-content",
    "cached above input",
    { promptTokenCount: 10, cachedContentTokenCount: 11, candidatesTokenCount: 2 },
  ],
  [
    "generate-content",
    "an output whose parts add up above the bound",
    { promptTokenCount: 10, candidatesTokenCount: chargeLimits.tokensPerRequestMax, thoughtsTokenCount: 1 },
  ],
];

type LogLine = { level: number; msg: string; requestId?: string; err?: { message: string } };

describe("usage an upstream reports that cannot be billed as it stands", () => {
  const log = capturedLog<LogLine>();
  let simulator: Simulator;
  let upstream: FaultyUpstream;
  let harness: GatewayHarness;

  beforeAll(async () => {
    simulator = await startSimulator({});
    upstream = await startFaultyUpstream(simulator.url);
    harness = await startGatewayHarness({
      label: "upstream_usage_bounds",
      billing: {},
      service: {
        logger: log.logger,
        upstreams: Object.fromEntries(
          modelFamilies.map((family) => [family, { baseUrl: upstream.url, apiKey: `secret-${family}` }]),
        ) as Record<ModelFamily, { baseUrl: string; apiKey: string }>,
      },
    });
  }, 60_000);
  afterEach(() => upstream.setPlan(() => ({ kind: "pass" })));
  afterAll(async () => {
    await harness?.close();
    await upstream?.close();
    await simulator?.close();
  });

  /** A user with a key and ₩1,000 of credit, and a read of their funds. */
  async function customer(userId: string) {
    const session = await harness.session(userId);
    const { key } = await harness.issueKey(session);
    await harness.topUp({ kind: "user", id: userId }, credit);
    const funds = async () => {
      const response = await fetch(`${harness.url}/llm/balance`, {
        headers: { authorization: `Bearer ${session}` },
      });
      const { user } = (await response.json()) as {
        user: { balanceWon: string; heldWon: string; pendingWon: string };
      };
      return { balanceWon: user.balanceWon, heldWon: user.heldWon, pendingWon: user.pendingWon };
    };
    return { client: harness.openai(key), funds };
  }

  async function eventsOf(requestId: string, count: number) {
    const read = () =>
      harness.service.ledger.pool.query<{ type: string; data: unknown }>(
        "SELECT type, data FROM ledger_events WHERE stream_id = $1 ORDER BY stream_version",
        [`usage-${requestId}`],
      );
    await expect.poll(async () => (await read()).rows.length, { timeout: 30_000 }).toBe(count);
    return (await read()).rows;
  }

  /** The request's recorded usage and its charge, once the reconciler has charged it. */
  async function chargedOf(requestId: string) {
    const [, recorded, charged] = await eventsOf(requestId, 3);
    expect([recorded?.type, charged?.type]).toEqual(["UsageRecorded", "UsageCharged"]);
    return {
      recorded: recorded!.data as EventData<"UsageRecorded">,
      charged: charged!.data as EventData<"UsageCharged">,
    };
  }

  /** Streams "Hi" to its end or its failure: the text received, the failure, and the request's id. */
  async function streamed(client: OpenAI, model: string) {
    const { data: chunks, response } = await client.chat.completions
      .create({ model, messages: [{ role: "user", content: "Hi" }], stream: true, max_tokens: 64 })
      .withResponse();
    let text = "";
    const failure = await (async () => {
      for await (const chunk of chunks) text += chunk.choices[0]?.delta.content ?? "";
    })().catch((error: unknown) => error);
    return { requestId: response.headers.get("x-request-id")!, text, failure };
  }

  describe("a complete JSON answer", () => {
    it.each(unusableJsonUsages)(
      "given a %s answer whose usage has %s, when a client asks, then it gets 500/300 for a malformed reply, the hold is voided and nothing is billed",
      async (protocol, _case, usage) => {
        // Given
        const { client, funds } = await customer(`json-${protocol}-${_case.replaceAll(" ", "-")}`);
        upstream.setPlan(() => ({ kind: "raw", writes: jsonAnswers[protocol](usage) }));

        // When
        const failure = await client.chat.completions
          .create({ model: modelOf[protocol], messages: [{ role: "user", content: "Hi" }] })
          .catch((error: unknown) => error);

        // Then
        expect(failure).toBeInstanceOf(OpenAI.APIError);
        const apiError = failure as InstanceType<typeof OpenAI.APIError>;
        expect(apiError.status).toBe(500);
        expect(apiError.error).toMatchObject({ code: 300 });
        const [, voided] = await eventsOf(apiError.headers!.get("x-request-id")!, 2);
        expect(voided).toMatchObject({ type: "UsageVoided" });
        expect((voided!.data as EventData<"UsageVoided">).attempts?.map((attempt) => attempt.error)).toEqual([
          "malformed",
        ]);
        expect(await funds()).toEqual({ balanceWon: credit, heldWon: "0", pendingWon: "0" });
      },
      60_000,
    );

    it("given a chat completion that reports the most input tokens one request may be billed, when a client asks, then it is billed them and its activity row lists them beside another request's", async () => {
      // Given
      const userId = "json-largest-billable-input";
      const { client } = await customer(userId);
      const session = await harness.session(userId);

      // When: an ordinary request first (the largest leaves the account far below zero), then the largest.
      upstream.setPlan(() => ({ kind: "pass" }));
      const ordinary = await client.chat.completions
        .create({ model: modelOf["chat-completions"], messages: [{ role: "user", content: "Hi" }] })
        .withResponse();
      upstream.setPlan(() => ({
        kind: "raw",
        writes: jsonAnswers["chat-completions"]({
          prompt_tokens: chargeLimits.tokensPerRequestMax,
          completion_tokens: 2,
        }),
      }));
      const largest = await client.chat.completions
        .create({ model: modelOf["chat-completions"], messages: [{ role: "user", content: "Hi" }] })
        .withResponse();

      // Then
      const largestId = largest.response.headers.get("x-request-id")!;
      const { recorded } = await chargedOf(largestId);
      expect(recorded.tokens.input).toBe(chargeLimits.tokensPerRequestMax);
      const listed = async () => {
        const response = await fetch(`${harness.url}/llm/usage/activity`, {
          headers: { authorization: `Bearer ${session}` },
        });
        const page = (await response.json()) as {
          data: { requestId: string; tokens: { input: number } | null }[];
        };
        return Object.fromEntries(page.data.map((row) => [row.requestId, row.tokens?.input]));
      };
      await expect.poll(listed, { timeout: 15_000 }).toEqual({
        [largestId]: chargeLimits.tokensPerRequestMax,
        [ordinary.response.headers.get("x-request-id")!]: expect.any(Number),
      });
    }, 60_000);

    it("given a chat completion that reports a cached count but no prompt count, when a client asks, then the gateway counts the input and bills it all at the input price, with no cached count", async () => {
      // Given: 5,000 cached, far above the 7 tokens the gateway counts in "Hi".
      const { client, funds } = await customer("json-cached-without-input");
      upstream.setPlan(() => ({
        kind: "raw",
        writes: jsonAnswers["chat-completions"]({
          completion_tokens: 2,
          prompt_tokens_details: { cached_tokens: 5_000 },
        }),
      }));

      // When
      const { data: completion, response } = await client.chat.completions
        .create({ model: "gamma-4-5", messages: [{ role: "user", content: "Hi" }] })
        .withResponse();

      // Then
      expect(completion.choices[0]?.message.content).toBe("Hello there");
      expect(completion.usage).toMatchObject({ prompt_tokens: estimatedInput, completion_tokens: 2 });
      expect(completion.usage?.prompt_tokens_details?.cached_tokens ?? 0).toBe(0);
      const { recorded, charged } = await chargedOf(response.headers.get("x-request-id")!);
      expect(recorded).toMatchObject({ outcome: "completed", usageSource: "estimated" });
      expect(recorded.tokens).toEqual({ input: estimatedInput, cached: null, output: 2, reasoning: null });
      // (7 × $0.20 + 2 × $0.50) / 1M × ₩1,400 = ₩0.00336
      expect(charged.amountWon).toBe("0.003360");
      await expect
        .poll(funds, { timeout: 10_000 })
        .toEqual({ balanceWon: "999.99664", heldWon: "0", pendingWon: "0" });
    }, 60_000);

    it("given a chat completion that reports a reasoning count but no completion count, when a client asks, then the gateway counts the output it produced, with no reasoning count", async () => {
      // Given
      const { client } = await customer("json-reasoning-without-output");
      upstream.setPlan(() => ({
        kind: "raw",
        writes: jsonAnswers["chat-completions"]({
          prompt_tokens: 10,
          completion_tokens_details: { reasoning_tokens: 500 },
        }),
      }));

      // When
      const { response } = await client.chat.completions
        .create({ model: "gamma-4-5", messages: [{ role: "user", content: "Hi" }] })
        .withResponse();

      // Then
      const { recorded, charged } = await chargedOf(response.headers.get("x-request-id")!);
      expect(recorded).toMatchObject({ outcome: "completed", usageSource: "estimated" });
      expect(recorded.tokens).toEqual({ input: 10, cached: null, output: countedOutput, reasoning: null });
      // (10 × $0.20 + 2 × $0.50) / 1M × ₩1,400 = ₩0.0042
      expect(charged.amountWon).toBe("0.004200");
    }, 60_000);

    it("given a chat completion whose counts are null, when a client asks, then they are not reported and the gateway counts them", async () => {
      // Given
      const { client } = await customer("json-null-counts");
      upstream.setPlan(() => ({
        kind: "raw",
        writes: jsonAnswers["chat-completions"]({
          prompt_tokens: null,
          completion_tokens: null,
          prompt_tokens_details: { cached_tokens: null },
        }),
      }));

      // When
      const { response } = await client.chat.completions
        .create({ model: "gamma-4-5", messages: [{ role: "user", content: "Hi" }] })
        .withResponse();

      // Then
      const { recorded, charged } = await chargedOf(response.headers.get("x-request-id")!);
      expect(recorded.tokens).toEqual({
        input: estimatedInput,
        cached: null,
        output: countedOutput,
        reasoning: null,
      });
      expect(charged.amountWon).toBe("0.003360");
    }, 60_000);
  });

  describe("a stream", () => {
    const chatChunk = (delta: object, extra: object = {}) =>
      data({
        id: "chatcmpl-upstream",
        object: "chat.completion.chunk",
        choices: [{ index: 0, delta, finish_reason: null }],
        ...extra,
      });

    it("given a chat-completions stream whose final usage counts above the bound, when a client streams, then it gets the text and an error event, and is billed the gateway's count of what it delivered", async () => {
      // Given
      const { client, funds } = await customer("stream-chat-above-bound");
      upstream.setPlan(() => ({
        kind: "raw",
        writes: streamReply([
          chatChunk({ role: "assistant", content: "Hello there" }),
          data({
            id: "chatcmpl-upstream",
            object: "chat.completion.chunk",
            choices: [{ index: 0, delta: {}, finish_reason: "stop" }],
          }),
          data({
            id: "chatcmpl-upstream",
            object: "chat.completion.chunk",
            choices: [],
            usage: { prompt_tokens: tooMany, completion_tokens: 2 },
          }),
          "data: [DONE]\n\n",
        ]),
      }));

      // When
      const { requestId, text, failure } = await streamed(client, "gamma-4-5");

      // Then
      expect(text).toBe("Hello there");
      expect(failure).toBeInstanceOf(OpenAI.APIError);
      expect((failure as Error).message).toContain("usage");
      const { recorded, charged } = await chargedOf(requestId);
      expect(recorded).toMatchObject({ outcome: "upstream-failed", usageSource: "estimated" });
      expect(recorded.tokens).toEqual({
        input: estimatedInput,
        cached: null,
        output: countedOutput,
        reasoning: null,
      });
      expect(charged.amountWon).toBe("0.003360");
      await expect
        .poll(funds, { timeout: 10_000 })
        .toEqual({ balanceWon: "999.99664", heldWon: "0", pendingWon: "0" });
      // The upstream's defect is logged with the request, as a failed JSON request's is.
      const logged = log.lines.find((line) => line.requestId === requestId && line.err !== undefined);
      expect(logged?.err?.message).toContain("upstream reported a usage that cannot be billed");
    }, 60_000);

    it("given a responses stream whose final usage has cached above input, when a client streams, then it gets the text and an error event, and is billed the gateway's count of what it delivered", async () => {
      // Given
      const { client } = await customer("stream-responses-cached-above-input");
      upstream.setPlan(() => ({
        kind: "raw",
        writes: streamReply([
          named("response.output_text.delta", { delta: "Hello there" }),
          named("response.completed", {
            response: {
              status: "completed",
              usage: { input_tokens: 10, output_tokens: 2, input_tokens_details: { cached_tokens: 11 } },
            },
          }),
        ]),
      }));

      // When
      const { requestId, text, failure } = await streamed(client, "alpha-5.4-pro");

      // Then
      expect(text).toBe("Hello there");
      expect(failure).toBeInstanceOf(OpenAI.APIError);
      const { recorded, charged } = await chargedOf(requestId);
      expect(recorded).toMatchObject({ outcome: "upstream-failed", usageSource: "estimated" });
      expect(recorded.tokens).toEqual({
        input: estimatedInput,
        cached: null,
        output: countedOutput,
        reasoning: null,
      });
      // (7 × $15 + 2 × $120) / 1M × ₩1,400 = ₩0.483
      expect(charged.amountWon).toBe("0.483000");
    }, 60_000);

    it("given a generateContent stream that reported its input, then a chunk with cached above input, when a client streams, then it is billed the input reported before and the gateway's count of the output", async () => {
      // Given
      const { client } = await customer("stream-generate-content-cached-above-input");
      upstream.setPlan(() => ({
        kind: "raw",
        writes: streamReply([
          generateContentChunk("Hello there", { promptTokenCount: 3_000, cachedContentTokenCount: 1_000 }),
          generateContentChunk(
            "",
            { promptTokenCount: 3_000, cachedContentTokenCount: 3_001, candidatesTokenCount: 2 },
            "STOP",
          ),
        ]),
      }));

      // When
      const { requestId, text, failure } = await streamed(client, "beta-3-flash");

      // Then
      expect(text).toBe("Hello there");
      expect(failure).toBeInstanceOf(OpenAI.APIError);
      const { recorded, charged } = await chargedOf(requestId);
      expect(recorded).toMatchObject({ outcome: "upstream-failed", usageSource: "estimated" });
      expect(recorded.tokens).toEqual({
        input: 3_000,
        cached: 1_000,
        output: countedOutput,
        reasoning: null,
      });
      // (2,000 × $0.30 + 1,000 × $0.03 + 2 × $2.50) / 1M × ₩1,400 = ₩0.889
      expect(charged.amountWon).toBe("0.889000");
    }, 60_000);

    it("given a messages stream whose start reports input above the bound, when a client streams, then nothing reached it: 500/300 for a malformed reply, the hold voided, nothing billed", async () => {
      // Given
      const { client, funds } = await customer("stream-messages-start-above-bound");
      upstream.setPlan(() => ({
        kind: "raw",
        writes: streamReply([
          named("message_start", {
            message: { id: "msg_upstream", usage: { input_tokens: tooMany, output_tokens: 1 } },
          }),
          named("content_block_start", { index: 0, content_block: { type: "text", text: "" } }) +
            named("content_block_delta", { index: 0, delta: { type: "text_delta", text: "Hello there" } }),
        ]),
      }));

      // When
      const failure = await client.chat.completions
        .create({ model: "delta-4.5-haiku", messages: [{ role: "user", content: "Hi" }], stream: true })
        .catch((error: unknown) => error);

      // Then
      expect(failure).toBeInstanceOf(OpenAI.APIError);
      const apiError = failure as InstanceType<typeof OpenAI.APIError>;
      expect(apiError.status).toBe(500);
      expect(apiError.error).toMatchObject({ code: 300 });
      const [, voided] = await eventsOf(apiError.headers!.get("x-request-id")!, 2);
      expect(voided).toMatchObject({ type: "UsageVoided" });
      expect(await funds()).toEqual({ balanceWon: credit, heldWon: "0", pendingWon: "0" });
    }, 60_000);

    it("given a messages stream whose final usage reports less input than its start did, when a client streams, then the answer completes and the input its start reported is billed", async () => {
      // Given: 1,300 uncached + 800 read from the cache + 100 written at the start; 0 input at the end.
      const { client, funds } = await customer("stream-messages-input-down");
      upstream.setPlan(() => ({
        kind: "raw",
        writes: streamReply([
          named("message_start", {
            message: {
              id: "msg_upstream",
              usage: {
                input_tokens: 1_300,
                cache_read_input_tokens: 800,
                cache_creation_input_tokens: 100,
                output_tokens: 1,
              },
            },
          }) + named("content_block_start", { index: 0, content_block: { type: "text", text: "" } }),
          named("content_block_delta", { index: 0, delta: { type: "text_delta", text: "Hello there" } }),
          named("content_block_stop", { index: 0 }) +
            named("message_delta", {
              delta: { stop_reason: "end_turn" },
              usage: { input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 7 },
            }) +
            named("message_stop", {}),
        ]),
      }));

      // When
      const { requestId, text, failure } = await streamed(client, "delta-4.5-haiku");

      // Then
      expect(text).toBe("Hello there");
      expect(failure).toBeUndefined();
      const { recorded, charged } = await chargedOf(requestId);
      expect(recorded).toMatchObject({ outcome: "completed", usageSource: "upstream" });
      expect(recorded.tokens).toEqual({ input: 2_200, cached: 800, output: 7, reasoning: null });
      // (1,400 × $1 + 800 × $0.10 + 7 × $5) / 1M × ₩1,400 = ₩2.121
      expect(charged.amountWon).toBe("2.121000");
      await expect
        .poll(funds, { timeout: 10_000 })
        .toEqual({ balanceWon: "997.879", heldWon: "0", pendingWon: "0" });
    }, 60_000);

    it("given a generateContent stream whose last running totals are lower than an earlier chunk's, when a client streams, then the answer completes and the highest counts reported are billed", async () => {
      // Given
      const { client } = await customer("stream-generate-content-totals-down");
      upstream.setPlan(() => ({
        kind: "raw",
        writes: streamReply([
          generateContentChunk("Hello", {
            promptTokenCount: 3_000,
            cachedContentTokenCount: 1_000,
            candidatesTokenCount: 1,
          }),
          generateContentChunk(" there", { promptTokenCount: 10, candidatesTokenCount: 2 }, "STOP"),
        ]),
      }));

      // When
      const { requestId, text, failure } = await streamed(client, "beta-3-flash");

      // Then
      expect(text).toBe("Hello there");
      expect(failure).toBeUndefined();
      const { recorded, charged } = await chargedOf(requestId);
      expect(recorded).toMatchObject({ outcome: "completed", usageSource: "upstream" });
      expect(recorded.tokens).toEqual({ input: 3_000, cached: 1_000, output: 2, reasoning: null });
      expect(charged.amountWon).toBe("0.889000");
    }, 60_000);
  });
});
