import { zodResponseFormat } from "openai/helpers/zod";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { type GatewayHarness, startGatewayHarness } from "../support/gateway-harness";

/**
 * One client, every upstream protocol (issue 13): the official `openai` client's tool loop, streamed tool
 * calls, structured output and an image with stop sequences, through the real gateway to a model of each
 * protocol, served by the simulator in that protocol's own words. What reached the upstream is asserted in
 * each protocol's shape; the protocol-specific details are the adapters' own tests.
 */

type Body = Record<string, unknown>;

interface ProtocolCase {
  model: string;
  protocol: string;
  /** The image and the stop sequences of the request, as this protocol carries them. */
  carriedImageAndStop(body: Body): { mediaType: string | undefined; data: string | undefined; stop: unknown };
}

const pixelPng =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

const cases: ProtocolCase[] = [
  {
    model: "alpha-5.4",
    protocol: "chat-completions",
    carriedImageAndStop: (body) => {
      const parts = (body.messages as { content: { type: string; image_url?: { url: string } }[] }[])[0]!
        .content;
      const url = parts.find((part) => part.type === "image_url")?.image_url?.url ?? "";
      const [, mediaType, data] = /^data:([^;]+);base64,(.*)$/.exec(url) ?? [];
      return { mediaType, data, stop: body.stop };
    },
  },
  {
    model: "delta-4.6-sonnet",
    protocol: "messages",
    carriedImageAndStop: (body) => {
      const blocks = (body.messages as { content: { type: string; source?: Body }[] }[])[0]!.content;
      const source = blocks.find((block) => block.type === "image")?.source;
      return {
        mediaType: source?.media_type as string | undefined,
        data: source?.data as string | undefined,
        stop: body.stop_sequences,
      };
    },
  },
  {
    model: "beta-3-flash",
    protocol: "generate-content",
    carriedImageAndStop: (body) => {
      const parts = (body.contents as { parts: { inlineData?: { mimeType: string; data: string } }[] }[])[0]!
        .parts;
      const inline = parts.find((part) => part.inlineData)?.inlineData;
      return {
        mediaType: inline?.mimeType,
        data: inline?.data,
        stop: (body.generationConfig as Body | undefined)?.stopSequences,
      };
    },
  },
];

const weatherTool = {
  type: "function" as const,
  function: {
    name: "get_weather",
    description: "The weather in a city",
    parameters: {
      type: "object",
      properties: { city: { type: "string" } },
      required: ["city"],
      additionalProperties: false,
    },
  },
};

describe.each(cases)("the chat-completions client against $model ($protocol upstream)", (protocolCase) => {
  let harness: GatewayHarness;
  let apiKey: string;
  const { model } = protocolCase;

  beforeAll(async () => {
    harness = await startGatewayHarness({ label: `matrix-${protocolCase.protocol}` });
    apiKey = (await harness.issueKey(await harness.session("mira"))).key;
    await harness.topUp({ kind: "user", id: "mira" }, "100000");
  });
  afterAll(async () => {
    await harness?.close();
  });
  beforeEach(() => harness.simulator.clearRecordedRequests());

  it("given a tool, when runTools runs, then the tool is called with arguments of its schema and a text answer ends the loop", async () => {
    const cities: string[] = [];
    const runner = harness.openai(apiKey).chat.completions.runTools({
      model,
      messages: [{ role: "user", content: "What is the weather in Busan?" }],
      tools: [
        {
          ...weatherTool,
          function: {
            ...weatherTool.function,
            parse: JSON.parse,
            function: (args: { city: string }) => {
              cities.push(args.city);
              return { celsius: 18 };
            },
          },
        },
      ],
    });
    const answer = await runner.finalContent();

    expect(cities).toEqual([expect.any(String)]);
    expect(answer?.length).toBeGreaterThan(0);
    expect(harness.simulator.recordedRequests()).toHaveLength(2);
    const completions = runner.allChatCompletions();
    expect(completions.map((completion) => completion.choices[0]!.finish_reason)).toEqual([
      "tool_calls",
      "stop",
    ]);
    // Both turns were billed with the upstream's counts; the first one's output is the call's arguments.
    expect(completions.every((completion) => completion.usage!.completion_tokens > 0)).toBe(true);
  });

  it("given a tool the model must call, when streamed, then the accumulated call equals the JSON reply's", async () => {
    const request = {
      model,
      messages: [{ role: "user" as const, content: "Weather in Jeju?" }],
      tools: [weatherTool],
      tool_choice: "required" as const,
    };
    const client = harness.openai(apiKey);
    const json = await client.chat.completions.create(request);
    const streamed = await client.chat.completions.stream(request).finalChatCompletion();

    const calls = (choice: (typeof json.choices)[number]) =>
      choice.message.tool_calls?.map((call) =>
        call.type === "function" ? [call.function.name, JSON.parse(call.function.arguments)] : [],
      );
    expect(json.choices[0]!.finish_reason).toBe("tool_calls");
    expect(calls(json.choices[0]!)).toEqual([["get_weather", { city: expect.any(String) }]]);
    expect(streamed.choices[0]!.finish_reason).toBe("tool_calls");
    expect(calls(streamed.choices[0]!)).toEqual(calls(json.choices[0]!));
  });

  it("given a json_schema response format, then the answer parses to an object of the schema", async () => {
    const forecast = z.object({ city: z.string(), celsius: z.number(), sunny: z.boolean() });
    const completion = await harness.openai(apiKey).chat.completions.parse({
      model,
      messages: [{ role: "user", content: "Forecast for Daegu as JSON." }],
      response_format: zodResponseFormat(forecast, "forecast"),
    });

    expect(forecast.safeParse(completion.choices[0]!.message.parsed).success).toBe(true);
  });

  it("given an image and stop sequences, then the upstream receives both in its own words", async () => {
    const completion = await harness.openai(apiKey).chat.completions.create({
      model,
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "What is in this picture?" },
            { type: "image_url", image_url: { url: `data:image/png;base64,${pixelPng}` } },
          ],
        },
      ],
      stop: ["END", "STOP"],
    });

    expect(completion.choices[0]!.message.content?.length).toBeGreaterThan(0);
    const body = harness.simulator.lastRequest()!.body as Body;
    expect(protocolCase.carriedImageAndStop(body)).toEqual({
      mediaType: "image/png",
      data: pixelPng,
      stop: ["END", "STOP"],
    });
  });
});
