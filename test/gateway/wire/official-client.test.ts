import OpenAI from "openai";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  cannedPieces,
  cannedText,
  cannedUsage,
  failingPrompt,
  fixedCreatedAtMs,
  startWireTestServer,
  upstreamFailureMessage,
  type WireTestServer,
} from "./support/wire-test-server";

/**
 * The wire modules checked with the official client itself: if our bodies or streams drifted from what it
 * parses, these tests (not our own parsers, which could share the same misunderstanding) would fail.
 */

let server: WireTestServer;
let client: OpenAI;

beforeAll(async () => {
  server = await startWireTestServer();
  client = new OpenAI({ baseURL: server.baseUrl, apiKey: "svc_test", maxRetries: 0 });
});
afterAll(() => server.close());
beforeEach(() => {
  server.parsedRequests.length = 0;
});

const question = "Why do rivers bend?";
const chatParams = {
  model: "alpha-5.4",
  messages: [
    { role: "developer" as const, content: "Answer in one sentence." },
    { role: "user" as const, content: question },
  ],
};
const failingChatParams = {
  model: "alpha-5.4",
  messages: [{ role: "user" as const, content: failingPrompt }],
};
const responsesParams = { model: "alpha-5.4-pro", instructions: "Answer in one sentence.", input: question };
const failingResponsesParams = { model: "alpha-5.4-pro", input: failingPrompt };

const chatUsage = {
  prompt_tokens: cannedUsage.inputTokens,
  completion_tokens: cannedUsage.outputTokens,
  total_tokens: cannedUsage.inputTokens + cannedUsage.outputTokens,
};
const responseUsage = {
  input_tokens: cannedUsage.inputTokens,
  input_tokens_details: { cached_tokens: cannedUsage.cachedInputTokens },
  output_tokens: cannedUsage.outputTokens,
  output_tokens_details: { reasoning_tokens: cannedUsage.reasoningTokens },
  total_tokens: cannedUsage.inputTokens + cannedUsage.outputTokens,
};

describe("chat completions through the official client", () => {
  it("create: the JSON body", async () => {
    const completion = await client.chat.completions.create({ ...chatParams, max_completion_tokens: 64 });
    expect(completion).toMatchObject({
      id: `chatcmpl-${fixedCreatedAtMs}`,
      object: "chat.completion",
      created: Math.floor(fixedCreatedAtMs / 1000),
      model: "alpha-5.4",
      choices: [{ index: 0, message: { role: "assistant", content: cannedText }, finish_reason: "stop" }],
      usage: chatUsage,
    });
    // What the client sent passed our parser: developer read as system, the newer limit field read.
    expect(server.parsedRequests).toEqual([
      {
        model: "alpha-5.4",
        messages: [
          { role: "system", content: "Answer in one sentence." },
          { role: "user", content: [{ type: "text", text: question }] },
        ],
        stream: false,
        maxOutputTokens: 64,
      },
    ]);
  });

  it("create with stream: the role first, the text in pieces, usage only on the last chunk", async () => {
    const stream = await client.chat.completions.create({
      ...chatParams,
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);

    expect(chunks[0]?.choices[0]?.delta.role).toBe("assistant");
    expect(chunks.map((chunk) => chunk.choices[0]?.delta.content ?? "")).toEqual([...cannedPieces, ""]);
    expect(chunks.at(-1)?.choices[0]?.finish_reason).toBe("stop");
    expect(chunks.at(-1)?.usage).toEqual(chatUsage);
    expect(chunks.slice(0, -1).map((chunk) => "usage" in chunk)).toEqual(cannedPieces.map(() => false));
  });

  it("stream().finalChatCompletion(): the assembled answer", async () => {
    const runner = client.chat.completions.stream(chatParams);
    let streamed = "";
    const usages: unknown[] = [];
    runner.on("content", (delta) => {
      streamed += delta;
    });
    // The client does not copy usage into the final completion; a caller reads it from the last chunk.
    runner.on("chunk", (chunk) => {
      if (chunk.usage) usages.push(chunk.usage);
    });
    const final = await runner.finalChatCompletion();
    expect(streamed).toBe(cannedText);
    expect(final.choices[0]?.message).toMatchObject({ role: "assistant", content: cannedText });
    expect(final.choices[0]?.finish_reason).toBe("stop");
    expect(final.id).toBe(`chatcmpl-${fixedCreatedAtMs}`);
    expect(usages).toEqual([chatUsage]);
  });

  it("service_tier auto, the protocol's default, is served as the responses format serves it; a named tier is refused by name", async () => {
    const completion = await client.chat.completions.create({ ...chatParams, service_tier: "auto" });
    expect(completion.choices[0]?.message.content).toBe(cannedText);
    expect(server.parsedRequests).toHaveLength(1);
    await expect(
      client.chat.completions.create({ ...chatParams, service_tier: "priority" }),
    ).rejects.toMatchObject({
      constructor: OpenAI.BadRequestError,
      message: '400 service_tier: must be "auto" or absent: the gateway chooses no service tier',
    });
  });

  it("a validation error reaches the caller as BadRequestError with our message", async () => {
    await expect(client.chat.completions.create({ ...chatParams, temperature: 2.5 })).rejects.toMatchObject({
      constructor: OpenAI.BadRequestError,
      status: 400,
      message: "400 temperature: must be a number from 0 to 2 inclusive",
    });
  });

  it("a failure mid-stream makes iteration throw with the message, after the text before it", async () => {
    const stream = await client.chat.completions.create({ ...failingChatParams, stream: true });
    const received: string[] = [];
    const iterate = async () => {
      for await (const chunk of stream) received.push(chunk.choices[0]?.delta.content ?? "");
    };
    await expect(iterate()).rejects.toMatchObject({
      constructor: OpenAI.APIError,
      message: upstreamFailureMessage,
      code: 300,
      type: "model_processing_error",
    });
    expect(received).toEqual([cannedPieces[0]]);
  });

  it("a failure mid-stream makes finalChatCompletion() reject with the message", async () => {
    await expect(
      client.chat.completions.stream(failingChatParams).finalChatCompletion(),
    ).rejects.toMatchObject({
      message: upstreamFailureMessage,
    });
  });
});

describe("responses through the official client", () => {
  it("create: the JSON body with output_text and usage", async () => {
    const response = await client.responses.create({ ...responsesParams, max_output_tokens: 32 });
    expect(response).toMatchObject({
      id: `resp-${fixedCreatedAtMs}`,
      object: "response",
      created_at: Math.floor(fixedCreatedAtMs / 1000),
      status: "completed",
      model: "alpha-5.4-pro",
      output: [
        {
          id: `resp-${fixedCreatedAtMs}-msg`,
          type: "message",
          status: "completed",
          role: "assistant",
          content: [{ type: "output_text", text: cannedText, annotations: [] }],
        },
      ],
      usage: responseUsage,
    });
    expect(response.output_text).toBe(cannedText);
    expect(server.parsedRequests).toEqual([
      {
        model: "alpha-5.4-pro",
        messages: [
          { role: "system", content: "Answer in one sentence." },
          { role: "user", content: [{ type: "text", text: question }] },
        ],
        stream: false,
        maxOutputTokens: 32,
      },
    ]);
  });

  it("create with stream: every event in order, numbered from 0, deltas reassembling the text", async () => {
    const stream = await client.responses.create({ ...responsesParams, stream: true });
    const events = [];
    for await (const event of stream) events.push(event);

    expect(events.map((event) => event.type)).toEqual([
      "response.created",
      "response.in_progress",
      "response.output_item.added",
      "response.content_part.added",
      ...cannedPieces.map(() => "response.output_text.delta"),
      "response.output_text.done",
      "response.content_part.done",
      "response.output_item.done",
      "response.completed",
    ]);
    expect(events.map((event) => event.sequence_number)).toEqual(events.map((_, index) => index));
    const deltas = events.flatMap((event) =>
      event.type === "response.output_text.delta" ? [event.delta] : [],
    );
    expect(deltas.join("")).toBe(cannedText);
    const completed = events.at(-1);
    expect(completed?.type === "response.completed" && completed.response.usage).toEqual(responseUsage);
  });

  it("stream().finalResponse(): output_text and usage, with the snapshot growing delta by delta", async () => {
    const runner = client.responses.stream(responsesParams);
    const snapshots: string[] = [];
    runner.on("response.output_text.delta", (event) => {
      snapshots.push(event.snapshot);
    });
    const final = await runner.finalResponse();
    expect(final.output_text).toBe(cannedText);
    expect(final.usage).toEqual(responseUsage);
    expect(final.status).toBe("completed");
    expect(snapshots).toEqual(cannedPieces.map((_, index) => cannedPieces.slice(0, index + 1).join("")));
  });

  it("a validation error reaches the caller as BadRequestError with our message", async () => {
    await expect(client.responses.create({ ...responsesParams, top_p: 1.5 })).rejects.toMatchObject({
      constructor: OpenAI.BadRequestError,
      status: 400,
      message: "400 top_p: must be a number from 0 to 1 inclusive",
    });
  });

  it("a failure mid-stream makes iteration throw with the message, after the events before it", async () => {
    const stream = await client.responses.create({ ...failingResponsesParams, stream: true });
    const types: string[] = [];
    const iterate = async () => {
      for await (const event of stream) types.push(event.type);
    };
    await expect(iterate()).rejects.toMatchObject({
      constructor: OpenAI.APIError,
      message: upstreamFailureMessage,
      code: 300,
    });
    expect(types).toEqual([
      "response.created",
      "response.in_progress",
      "response.output_item.added",
      "response.content_part.added",
      "response.output_text.delta",
    ]);
  });

  it("a failure mid-stream makes finalResponse() reject with the message", async () => {
    await expect(client.responses.stream(failingResponsesParams).finalResponse()).rejects.toMatchObject({
      message: upstreamFailureMessage,
    });
  });

  it("a failure before streaming is a plain 500 error with the message", async () => {
    await expect(client.responses.create(failingResponsesParams)).rejects.toMatchObject({
      constructor: OpenAI.InternalServerError,
      status: 500,
      message: `500 ${upstreamFailureMessage}`,
    });
  });
});
