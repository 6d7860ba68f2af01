import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { timeTool, weatherTool } from "../support/chat-completions-tools";
import { type GatewayHarness, startGatewayHarness } from "../support/gateway-harness";

/**
 * One conversation, its models switched between turns: every model is served behind one API, so a client
 * may send the tool calls one model made to a model of another protocol. A call's id only pairs it with its
 * result, but each protocol refuses ids outside its own rule (messages: letters, digits, `_` and `-`; chat
 * completions: at most 40 characters; responses: at most 64), and a generateContent model's call id carries
 * its thought signature (base64, often hundreds of characters). The simulator refuses such ids as those
 * upstreams do.
 */

type Body = Record<string, unknown>;

interface TargetCase {
  model: string;
  protocol: string;
  /** The ids of the replayed calls and of their results, as the upstream received them. */
  carriedIds(body: Body): { calls: string[]; results: string[] };
}

const targets: TargetCase[] = [
  {
    model: "alpha-5.4",
    protocol: "chat-completions",
    carriedIds: (body) => {
      const messages = body.messages as { tool_calls?: { id: string }[]; tool_call_id?: string }[];
      return {
        calls: messages.flatMap((message) => (message.tool_calls ?? []).map((call) => call.id)),
        results: messages.flatMap((message) => (message.tool_call_id ? [message.tool_call_id] : [])),
      };
    },
  },
  {
    model: "alpha-5.4-pro",
    protocol: "responses",
    carriedIds: (body) => {
      const items = body.input as { type?: string; call_id?: string }[];
      const idsOf = (type: string) =>
        items.flatMap((item) => (item.type === type && item.call_id ? [item.call_id] : []));
      return { calls: idsOf("function_call"), results: idsOf("function_call_output") };
    },
  },
  {
    model: "delta-4.6-sonnet",
    protocol: "messages",
    carriedIds: (body) => {
      const blocks = (body.messages as { content: string | Body[] }[]).flatMap((turn) =>
        typeof turn.content === "string" ? [] : turn.content,
      );
      return {
        calls: blocks.flatMap((block) => (block.type === "tool_use" ? [block.id as string] : [])),
        results: blocks.flatMap((block) =>
          block.type === "tool_result" ? [block.tool_use_id as string] : [],
        ),
      };
    },
  },
];

const question = { role: "user" as const, content: "What is the weather and the time in Seoul?" };

describe.each(targets)(
  "calls a generateContent model made, continued on $model ($protocol upstream)",
  (target) => {
    let harness: GatewayHarness;
    let apiKey: string;

    beforeAll(async () => {
      harness = await startGatewayHarness({ label: `switch-${target.protocol}` });
      apiKey = (await harness.issueKey(await harness.session("sena"))).key;
      await harness.topUp({ kind: "user", id: "sena" }, "100000");
    });
    afterAll(async () => {
      await harness?.close();
    });
    beforeEach(() => harness.simulator.clearRecordedRequests());

    it("given the calls and their results in chat completions, when sent on, then each call and its result reach the upstream under one id it accepts, and the model answers", async () => {
      const client = harness.openai(apiKey);
      const first = await client.chat.completions.create({
        model: "beta-3-flash",
        messages: [question],
        tools: [weatherTool, timeTool],
      });
      const calls = first.choices[0]!.message.tool_calls ?? [];
      expect(calls).toHaveLength(2);
      // The thinking model signed its first call: the signature rides in the id, past every other rule.
      expect(calls[0]!.id.length).toBeGreaterThan(64);

      harness.simulator.clearRecordedRequests();
      const second = await client.chat.completions.create({
        model: target.model,
        tools: [weatherTool, timeTool],
        messages: [
          question,
          first.choices[0]!.message,
          ...calls.map((call) => ({ role: "tool" as const, tool_call_id: call.id, content: '{"ok":true}' })),
        ],
      });

      expect(second.choices[0]!.message.content?.length).toBeGreaterThan(0);
      const carried = target.carriedIds(harness.simulator.lastRequest()!.body as Body);
      expect(carried.calls).toHaveLength(2);
      expect(carried.results).toEqual(carried.calls);
      expect(new Set(carried.calls).size).toBe(2);
    });

    it("given the calls and their outputs as responses items, when sent on, then each call and its output reach the upstream under one id it accepts", async () => {
      const client = harness.openai(apiKey);
      const tools = [weatherTool, timeTool].map((tool) => ({
        type: "function" as const,
        name: tool.function.name,
        parameters: tool.function.parameters,
        strict: false,
      }));
      const first = await client.responses.create({ model: "beta-3-flash", input: [question], tools });
      const calls = first.output.flatMap((item) => (item.type === "function_call" ? [item] : []));
      expect(calls).toHaveLength(2);

      harness.simulator.clearRecordedRequests();
      const second = await client.responses.create({
        model: target.model,
        tools,
        input: [
          question,
          ...calls,
          ...calls.map((call) => ({
            type: "function_call_output" as const,
            call_id: call.call_id,
            output: '{"ok":true}',
          })),
        ],
      });

      expect(second.output_text.length).toBeGreaterThan(0);
      const carried = target.carriedIds(harness.simulator.lastRequest()!.body as Body);
      expect(carried.calls).toHaveLength(2);
      expect(carried.results).toEqual(carried.calls);
    });
  },
);

describe("calls sent back to the generateContent model that made them", () => {
  let harness: GatewayHarness;
  let apiKey: string;

  beforeAll(async () => {
    harness = await startGatewayHarness({ label: "switch-back" });
    apiKey = (await harness.issueKey(await harness.session("sena"))).key;
    await harness.topUp({ kind: "user", id: "sena" }, "100000");
  });
  afterAll(async () => {
    await harness?.close();
  });

  it("given a signed call, when sent back to a generateContent model, then its thought signature reaches the upstream whole", async () => {
    const client = harness.openai(apiKey);
    const first = await client.chat.completions.create({
      model: "beta-3-flash",
      messages: [question],
      tools: [weatherTool],
    });
    const call = first.choices[0]!.message.tool_calls![0]!;
    const signature = call.id.slice(call.id.indexOf("__thought__") + "__thought__".length);

    harness.simulator.clearRecordedRequests();
    await client.chat.completions.create({
      model: "beta-3-flash",
      tools: [weatherTool],
      messages: [question, first.choices[0]!.message, { role: "tool", tool_call_id: call.id, content: "{}" }],
    });

    const contents = (harness.simulator.lastRequest()!.body as Body).contents as {
      parts: { functionCall?: unknown; thoughtSignature?: string }[];
    }[];
    const callPart = contents.flatMap((content) => content.parts).find((part) => part.functionCall);
    expect(callPart?.thoughtSignature).toBe(signature);
  });
});

describe("call arguments a model of another protocol cannot carry", () => {
  let harness: GatewayHarness;
  let apiKey: string;

  beforeAll(async () => {
    harness = await startGatewayHarness({ label: "switch-arguments" });
    apiKey = (await harness.issueKey(await harness.session("sena"))).key;
    await harness.topUp({ kind: "user", id: "sena" }, "100000");
  });
  afterAll(async () => {
    await harness?.close();
  });

  // A chat-completions model takes a call's arguments as any text; these two protocols take an object.
  it.each(["delta-4.6-sonnet", "beta-3-flash"])(
    "given a replayed call whose arguments are not a JSON object, when sent to %s, then 400/100 names the call before any upstream call",
    async (model) => {
      harness.simulator.clearRecordedRequests();
      const response = await fetch(`${harness.baseUrl}/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
        body: JSON.stringify({
          model,
          tools: [weatherTool],
          messages: [
            question,
            {
              role: "assistant",
              content: null,
              tool_calls: [
                { id: "call_1", type: "function", function: { name: "get_weather", arguments: "Seoul" } },
              ],
            },
            { role: "tool", tool_call_id: "call_1", content: "{}" },
          ],
        }),
      });

      expect(response.status).toBe(400);
      expect(await response.json()).toMatchObject({
        status: 100,
        message: 'arguments of tool call "call_1": not a JSON object',
        error: { type: "invalid_request_error" },
      });
      expect(harness.simulator.recordedRequests()).toEqual([]);
    },
  );
});
