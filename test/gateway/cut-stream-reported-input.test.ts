import OpenAI from "openai";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { modelFamilies } from "../../src/config";
import { Money } from "../../src/kernel/money";
import type { EventData } from "../../src/ledger/events";
import type { ModelFamily } from "../../src/providers/provider";
import { type Simulator, startSimulator } from "../../src/providers/simulator/simulator";
import { type FaultyUpstream, startFaultyUpstream } from "../support/faulty-upstream";
import { type GatewayHarness, startGatewayHarness } from "../support/gateway-harness";
import {
  chunkOf,
  type MessagesInputUsage,
  messagesStreamStart,
  streamHead,
} from "../support/raw-upstream-stream";

/**
 * A stream cut before the upstream's final usage (C7): the input the upstream reported at the stream's start
 * (messages `message_start`, every generateContent chunk's `usageMetadata`) is billed as reported, cached
 * input at its own price; only the output is the gateway's count of the text delivered. Through the real
 * gateway, its ledger and its reconciler, with the official openai client; upstreams that break on cue.
 */

const streamDeadlineMs = 1_500;

/** A chunk of a chunked body that is none: where an upstream's stream breaks. */
const brokenChunk = "zz\r\n";

/** 1,300 uncached + 800 read from the cache + 100 written to it: input 2,200, of which 800 cached. */
const cachedInputUsage: MessagesInputUsage = {
  input_tokens: 1_300,
  cache_read_input_tokens: 800,
  cache_creation_input_tokens: 100,
};

/** The same start, then the chunked body breaks. */
function messagesStreamBrokenAfter(text: string, usage: MessagesInputUsage): string[] {
  return [...messagesStreamStart(text, usage), brokenChunk];
}

describe("a stream cut before the upstream's final usage", () => {
  let simulator: Simulator;
  let delta: FaultyUpstream;
  let beta: FaultyUpstream;
  let harness: GatewayHarness;

  beforeAll(async () => {
    simulator = await startSimulator({});
    delta = await startFaultyUpstream(simulator.url);
    beta = await startFaultyUpstream(simulator.url);
    const upstreamOf = (family: ModelFamily) =>
      family === "delta" ? delta.url : family === "beta" ? beta.url : simulator.url;
    harness = await startGatewayHarness({
      label: "cut_stream_reported_input",
      billing: {},
      service: {
        upstreams: Object.fromEntries(
          modelFamilies.map((family) => [
            family,
            { baseUrl: upstreamOf(family), apiKey: `secret-${family}` },
          ]),
        ) as Record<ModelFamily, { baseUrl: string; apiKey: string }>,
        settlementTimings: { streamDeadlineMs },
      },
    });
  }, 60_000);
  afterEach(() => {
    delta.setPlan(() => ({ kind: "pass" }));
    beta.setPlan(() => ({ kind: "pass" }));
  });
  afterAll(async () => {
    await harness?.close();
    await delta?.close();
    await beta?.close();
    await simulator?.close();
  });

  /** A user with a key and this much credit, and a read of their funds. */
  async function customer(userId: string, creditWon: string) {
    const session = await harness.session(userId);
    const { key } = await harness.issueKey(session);
    await harness.topUp({ kind: "user", id: userId }, creditWon);
    const funds = async () => {
      const response = await fetch(`${harness.url}/llm/balance`, {
        headers: { authorization: `Bearer ${session}` },
      });
      return (
        (await response.json()) as {
          user: { id: string; balanceWon: string; heldWon: string; pendingWon: string };
        }
      ).user;
    };
    return { key, client: harness.openai(key), funds };
  }

  /** Streams a chat completion to its end or its failure: the text received and the request's id. */
  async function streamed(client: OpenAI, model: string, content: string, maxTokens = 64) {
    const { data, response } = await client.chat.completions
      .create({ model, messages: [{ role: "user", content }], stream: true, max_tokens: maxTokens })
      .withResponse();
    let text = "";
    const failure = await (async () => {
      for await (const chunk of data) text += chunk.choices[0]?.delta.content ?? "";
    })().catch((error: unknown) => error);
    return { requestId: response.headers.get("x-request-id")!, text, failure };
  }

  /** The request's recorded usage and its charge, once the reconciler has charged it. */
  async function chargedOf(requestId: string) {
    const read = () =>
      harness.service.ledger.pool.query<{ type: string; data: unknown }>(
        "SELECT type, data FROM ledger_events WHERE stream_id = $1 ORDER BY stream_version",
        [`usage-${requestId}`],
      );
    await expect
      .poll(async () => (await read()).rows.map((row) => row.type), { timeout: 30_000 })
      .toEqual(["UsageAuthorized", "UsageRecorded", "UsageCharged"]);
    const [authorized, recorded, charged] = (await read()).rows.map((row) => row.data);
    return {
      authorized: authorized as EventData<"UsageAuthorized">,
      recorded: recorded as EventData<"UsageRecorded">,
      charged: charged as EventData<"UsageCharged">,
    };
  }

  it("given a messages stream that reported its input and cache counts at its start, when the upstream connection breaks after output, then those counts are billed and only the output is counted", async () => {
    // Given
    const { client, funds } = await customer("cut-messages", "1000");
    delta.setPlan(() => ({
      kind: "raw",
      writes: messagesStreamBrokenAfter("Hello there", cachedInputUsage),
    }));

    // When
    const { requestId, text, failure } = await streamed(client, "delta-4.5-haiku", "Hi");

    // Then
    expect(text).toBe("Hello there");
    expect(failure).toBeInstanceOf(OpenAI.APIError);
    const { recorded, charged } = await chargedOf(requestId);
    expect(recorded).toMatchObject({ outcome: "upstream-failed", usageSource: "estimated" });
    expect(recorded.tokens).toEqual({ input: 2_200, cached: 800, output: 2, reasoning: null });
    // (1,400 × $1 + 800 × $0.10 + 2 × $5) / 1M × ₩1,400 = ₩2.086
    expect(charged.amountWon).toBe("2.086000");
    expect(charged.breakdown).toMatchObject({ tokens: recorded.tokens, usageSource: "estimated" });
    await expect
      .poll(funds, { timeout: 10_000 })
      .toEqual({ id: "cut-messages", balanceWon: "997.914", heldWon: "0", pendingWon: "0" });
  }, 60_000);

  it("given a generateContent stream whose chunk reported the prompt and cached counts, when the upstream connection breaks after it, then those counts are billed and only the output is counted", async () => {
    // Given
    const { client } = await customer("cut-generate-content", "1000");
    const chunk = {
      candidates: [{ content: { role: "model", parts: [{ text: "Hello there" }] }, index: 0 }],
      usageMetadata: {
        promptTokenCount: 3_000,
        cachedContentTokenCount: 1_000,
        candidatesTokenCount: 2,
        totalTokenCount: 3_002,
      },
    };
    beta.setPlan(() => ({
      kind: "raw",
      writes: [streamHead + chunkOf(`data: ${JSON.stringify(chunk)}\n\n`), brokenChunk],
    }));

    // When
    const { requestId, text } = await streamed(client, "beta-3-flash", "Hi");

    // Then
    expect(text).toBe("Hello there");
    const { recorded, charged } = await chargedOf(requestId);
    expect(recorded).toMatchObject({ outcome: "upstream-failed", usageSource: "estimated" });
    expect(recorded.tokens).toEqual({ input: 3_000, cached: 1_000, output: 2, reasoning: null });
    // (2,000 × $0.30 + 1,000 × $0.03 + 2 × $2.50) / 1M × ₩1,400 = ₩0.889
    expect(charged.amountWon).toBe("0.889000");
  }, 60_000);

  it("given a messages stream that reported its input and cache counts, when the client disconnects mid-stream, then those counts are billed and only the output is counted", async () => {
    // Given: an upstream that starts its answer, then stalls.
    const { key } = await customer("cut-disconnect", "1000");
    delta.setPlan(() => ({
      kind: "raw",
      writes: messagesStreamStart("Hello there", cachedInputUsage),
      keepOpen: true,
    }));

    // When: the client reads the text, then leaves.
    const controller = new AbortController();
    const response = await fetch(`${harness.baseUrl}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({
        model: "delta-4.5-haiku",
        messages: [{ role: "user", content: "Hi" }],
        stream: true,
        max_tokens: 64,
      }),
      signal: controller.signal,
    });
    const requestId = response.headers.get("x-request-id")!;
    const reader = response.body!.getReader();
    let received = "";
    while (!received.includes("Hello there"))
      received += new TextDecoder().decode((await reader.read()).value);
    controller.abort();

    // Then
    const { recorded, charged } = await chargedOf(requestId);
    expect(recorded).toMatchObject({ outcome: "client-disconnected", usageSource: "estimated" });
    expect(recorded.tokens).toEqual({ input: 2_200, cached: 800, output: 2, reasoning: null });
    expect(charged.amountWon).toBe("2.086000");
  }, 60_000);

  it("given a messages stream that reported its input and cache counts, when the stream deadline cuts it, then those counts are billed and only the output is counted", async () => {
    // Given
    const { client } = await customer("cut-deadline", "1000");
    delta.setPlan(() => ({
      kind: "raw",
      writes: messagesStreamStart("Hello there", cachedInputUsage),
      keepOpen: true,
    }));

    // When
    const { requestId, text, failure } = await streamed(client, "delta-4.5-haiku", "Hi");

    // Then
    expect(text).toBe("Hello there");
    expect(String(failure)).toContain("stream deadline");
    const { recorded, charged } = await chargedOf(requestId);
    expect(recorded).toMatchObject({ outcome: "deadline-exceeded", usageSource: "estimated" });
    expect(recorded.tokens).toEqual({ input: 2_200, cached: 800, output: 2, reasoning: null });
    expect(charged.amountWon).toBe("2.086000");
  }, 60_000);

  it("given an upstream that counts more input than the request's body has bytes, when its stream breaks after output, then the count is billed as a whole answer's would be: the hold is released exactly and the account ends no lower than minus that request's cost", async () => {
    // Given: ₩10 of credit; the hold prices the body's ~100 bytes and 16 output tokens, well under ₩1.
    const { client, funds } = await customer("cut-above-hold", "10");
    delta.setPlan(() => ({
      kind: "raw",
      writes: messagesStreamBrokenAfter("Hello there", {
        input_tokens: 200_000,
        cache_read_input_tokens: 0,
        cache_creation_input_tokens: 0,
      }),
    }));

    // When
    const { requestId } = await streamed(client, "delta-4.5-haiku", "Hi", 16);

    // Then: (200,000 × $1 + 2 × $5) / 1M × ₩1,400 = ₩280.014, above the hold.
    const { authorized, recorded, charged } = await chargedOf(requestId);
    expect(recorded.tokens).toEqual({ input: 200_000, cached: 0, output: 2, reasoning: null });
    expect(new Money(authorized.estimate.estimatedWon).lessThan(1)).toBe(true);
    expect(recorded.heldWon).toBe(authorized.holdWon);
    expect(recorded.pendingWon).toBe("280.014000");
    expect(charged.amountWon).toBe("280.014000");
    await expect
      .poll(funds, { timeout: 10_000 })
      .toEqual({ id: "cut-above-hold", balanceWon: "-270.014", heldWon: "0", pendingWon: "0" });
    // Below ₩1, the account's next request is refused before anything reaches the upstream.
    delta.served.length = 0;
    await expect(streamed(client, "delta-4.5-haiku", "Hi", 16)).rejects.toMatchObject({ status: 400 });
    expect(delta.served).toHaveLength(0);
  }, 60_000);
});
