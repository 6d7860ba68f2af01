import type OpenAI from "openai";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { weatherTool } from "../support/chat-completions-tools";
import { type GatewayHarness, startGatewayHarness } from "../support/gateway-harness";

/**
 * A tool loop on a messages-protocol model with reasoning on. With thinking on, that upstream refuses a
 * request whose last assistant turn has its calls answered but does not start with the thinking block the
 * model gave; the gateway returns no thinking blocks to its clients, so no client can send one back. The
 * simulator refuses such a request as the upstream does.
 */

type Body = Record<string, unknown>;

const model = "delta-4.6-sonnet";
const question = { role: "user" as const, content: "What is the weather in Seoul?" };
const weatherFunction = {
  type: "function" as const,
  name: weatherTool.function.name,
  parameters: weatherTool.function.parameters,
  strict: false,
};

let harness: GatewayHarness;
let client: OpenAI;

beforeAll(async () => {
  harness = await startGatewayHarness({ label: "delta-thinking-tools" });
  const apiKey = (await harness.issueKey(await harness.session("hana"))).key;
  await harness.topUp({ kind: "user", id: "hana" }, "100000");
  client = harness.openai(apiKey);
});
afterAll(async () => {
  await harness?.close();
});
beforeEach(() => harness.simulator.clearRecordedRequests());

const sentBody = () => harness.simulator.lastRequest()!.body as Body;

/** Turn 1 in chat completions: the model calls the tool, the client runs it. */
async function chatToolLoop(): Promise<OpenAI.ChatCompletionMessageParam[]> {
  const first = await client.chat.completions.create({
    model,
    reasoning_effort: "high",
    tools: [weatherTool],
    messages: [question],
  });
  const message = first.choices[0]!.message;
  expect(message.tool_calls).toHaveLength(1);
  expect(sentBody().thinking).toEqual({ type: "adaptive" });
  harness.simulator.clearRecordedRequests();
  return [
    question,
    message,
    ...(message.tool_calls ?? []).map((call) => ({
      role: "tool" as const,
      tool_call_id: call.id,
      content: '{"celsius":18,"sky":"clear"}',
    })),
  ];
}

/** Turn 1 in responses: the function_call items, then their outputs. */
async function responsesToolLoop(): Promise<OpenAI.Responses.ResponseInputItem[]> {
  const first = await client.responses.create({
    model,
    reasoning: { effort: "high" },
    tools: [weatherFunction],
    input: [question],
  });
  const calls = first.output.flatMap((item) => (item.type === "function_call" ? [item] : []));
  expect(calls).toHaveLength(1);
  harness.simulator.clearRecordedRequests();
  return [
    question,
    ...calls,
    ...calls.map((call) => ({
      type: "function_call_output" as const,
      call_id: call.call_id,
      output: '{"celsius":18,"sky":"clear"}',
    })),
  ];
}

/** The turn that answers the calls is sent without thinking; its effort and output limit are kept. */
function expectSentWithoutThinking() {
  expect(sentBody()).toMatchObject({
    thinking: { type: "disabled" },
    output_config: { effort: "high" },
    max_tokens: 32_000,
  });
}

describe("a tool loop on a delta model with reasoning on", () => {
  it("given the call and its result sent back in chat completions, when asked, then 200 with the model's answer", async () => {
    const messages = await chatToolLoop();
    const second = await client.chat.completions.create({
      model,
      reasoning_effort: "high",
      tools: [weatherTool],
      messages,
    });
    expect(second.choices[0]!.message.content).toMatch(/\w/);
    expect(second.choices[0]!.finish_reason).toBe("stop");
    expectSentWithoutThinking();
  });

  it("given the call and its result sent back in chat completions, when streamed, then the model's answer streams to its end", async () => {
    const messages = await chatToolLoop();
    const final = await client.chat.completions
      .stream({ model, reasoning_effort: "high", tools: [weatherTool], messages })
      .finalChatCompletion();
    expect(final.choices[0]!.message.content).toMatch(/\w/);
    expect(final.usage?.completion_tokens).toBeGreaterThan(0);
    expectSentWithoutThinking();
  });

  it("given the call and its output sent back in responses, when asked, then 200 with the model's answer", async () => {
    const input = await responsesToolLoop();
    const second = await client.responses.create({
      model,
      reasoning: { effort: "high" },
      tools: [weatherFunction],
      input,
    });
    expect(second.output_text).toMatch(/\w/);
    expectSentWithoutThinking();
  });

  it("given the call and its output sent back in responses, when streamed, then the model's answer streams to its end", async () => {
    const input = await responsesToolLoop();
    const final = await client.responses
      .stream({ model, reasoning: { effort: "high" }, tools: [weatherFunction], input })
      .finalResponse();
    expect(final.output_text).toMatch(/\w/);
    expect(final.usage?.output_tokens).toBeGreaterThan(0);
    expectSentWithoutThinking();
  });

  it("given the loop answered and a new question of the user, when asked, then the model thinks again", async () => {
    const messages = await chatToolLoop();
    const answer = await client.chat.completions.create({
      model,
      reasoning_effort: "high",
      tools: [weatherTool],
      messages,
    });
    harness.simulator.clearRecordedRequests();
    await client.chat.completions.create({
      model,
      reasoning_effort: "high",
      tools: [weatherTool],
      messages: [...messages, answer.choices[0]!.message, { role: "user", content: "And in Busan?" }],
    });
    expect(sentBody()).toMatchObject({ thinking: { type: "adaptive" }, output_config: { effort: "high" } });
  });
});
