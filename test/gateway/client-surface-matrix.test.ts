import OpenAI from "openai";
import { zodResponseFormat, zodTextFormat } from "openai/helpers/zod";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { type GatewayHarness, startGatewayHarness } from "../support/gateway-harness";

/**
 * Both client formats, every upstream protocol (issue 13): the official `openai` client's tool loops,
 * streamed tool calls, structured output and images, through the real gateway to a model of each protocol,
 * served by the simulator in that protocol's own words. What reached the upstream is asserted in each
 * protocol's shape; the protocol-specific details are the adapters' own tests.
 */

type Body = Record<string, unknown>;

interface CarriedImage {
  mediaType: string | undefined;
  data: string | undefined;
}

interface ProtocolCase {
  model: string;
  protocol: string;
  /** The first image of the request, as this protocol carries it. */
  carriedImage(body: Body): CarriedImage;
  /** The stop sequences, for a protocol that has them. */
  carriedStop?(body: Body): unknown;
  /** The first image's detail, for a protocol that has the hint; without it, low or high is refused. */
  carriedDetail?(body: Body): unknown;
}

const pixelPng =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

const fromDataUrl = (url: string | undefined): CarriedImage => {
  const [, mediaType, data] = /^data:([^;]+);base64,(.*)$/.exec(url ?? "") ?? [];
  return { mediaType, data };
};

const cases: ProtocolCase[] = [
  {
    model: "alpha-5.4",
    protocol: "chat-completions",
    carriedImage: (body) => {
      const parts = (body.messages as { content: { type: string; image_url?: { url: string } }[] }[])[0]!
        .content;
      return fromDataUrl(parts.find((part) => part.type === "image_url")?.image_url?.url);
    },
    carriedStop: (body) => body.stop,
    carriedDetail: (body) => {
      const parts = (body.messages as { content: { type: string; image_url?: { detail?: string } }[] }[])[0]!
        .content;
      return parts.find((part) => part.type === "image_url")?.image_url?.detail;
    },
  },
  {
    model: "alpha-5.4-pro",
    protocol: "responses",
    carriedImage: (body) => {
      const parts = (body.input as { content: { type: string; image_url?: string }[] }[])[0]!.content;
      return fromDataUrl(parts.find((part) => part.type === "input_image")?.image_url);
    },
    carriedDetail: (body) => {
      const parts = (body.input as { content: { type: string; detail?: string }[] }[])[0]!.content;
      return parts.find((part) => part.type === "input_image")?.detail;
    },
  },
  {
    model: "delta-4.6-sonnet",
    protocol: "messages",
    carriedImage: (body) => {
      const blocks = (body.messages as { content: { type: string; source?: Body }[] }[])[0]!.content;
      const source = blocks.find((block) => block.type === "image")?.source;
      return {
        mediaType: source?.media_type as string | undefined,
        data: source?.data as string | undefined,
      };
    },
    carriedStop: (body) => body.stop_sequences,
  },
  {
    model: "beta-3-flash",
    protocol: "generate-content",
    carriedImage: (body) => {
      const parts = (body.contents as { parts: { inlineData?: { mimeType: string; data: string } }[] }[])[0]!
        .parts;
      const inline = parts.find((part) => part.inlineData)?.inlineData;
      return { mediaType: inline?.mimeType, data: inline?.data };
    },
    carriedStop: (body) => (body.generationConfig as Body | undefined)?.stopSequences,
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

  it("given an image (and stop sequences where the protocol has them), then the upstream receives them in its own words", async () => {
    const stop = protocolCase.carriedStop ? { stop: ["END", "STOP"] } : {};
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
      ...stop,
    });

    expect(completion.choices[0]!.message.content?.length).toBeGreaterThan(0);
    const body = harness.simulator.lastRequest()!.body as Body;
    expect(protocolCase.carriedImage(body)).toEqual({ mediaType: "image/png", data: pixelPng });
    if (protocolCase.carriedStop) expect(protocolCase.carriedStop(body)).toEqual(["END", "STOP"]);
  });
  it("given an image's detail high, then a protocol with the hint receives it, and one without refuses it by name before any upstream call", async () => {
    const request = {
      model,
      messages: [
        {
          role: "user" as const,
          content: [
            { type: "text" as const, text: "What is in this picture?" },
            {
              type: "image_url" as const,
              image_url: { url: `data:image/png;base64,${pixelPng}`, detail: "high" as const },
            },
          ],
        },
      ],
    };
    const sent = harness.openai(apiKey).chat.completions.create(request);

    if (protocolCase.carriedDetail) {
      await sent;
      expect(protocolCase.carriedDetail(harness.simulator.lastRequest()!.body as Body)).toBe("high");
    } else {
      await expect(sent).rejects.toMatchObject({
        constructor: OpenAI.BadRequestError,
        message: `400 messages: image_url.detail: "high" is not supported by ${model}, which takes images at its own resolution; send "auto" or leave it out`,
      });
      expect(harness.simulator.recordedRequests()).toHaveLength(0);
    }
  });
});

describe.each(cases)("the responses client against $model ($protocol upstream)", (protocolCase) => {
  let harness: GatewayHarness;
  let apiKey: string;
  const { model } = protocolCase;
  const tool = { ...weatherTool.function, type: "function" as const, strict: false };

  beforeAll(async () => {
    harness = await startGatewayHarness({ label: `matrix-responses-${protocolCase.protocol}` });
    apiKey = (await harness.issueKey(await harness.session("ren"))).key;
    await harness.topUp({ kind: "user", id: "ren" }, "100000");
  });
  afterAll(async () => {
    await harness?.close();
  });
  beforeEach(() => harness.simulator.clearRecordedRequests());

  it("given a function tool, then the call comes back as an item and its output gets a text answer", async () => {
    const client = harness.openai(apiKey);
    const input = [{ role: "user" as const, content: "What is the weather in Gwangju?" }];
    const first = await client.responses.create({ model, input, tools: [tool] });
    const calls = first.output.filter((item) => item.type === "function_call");
    expect(calls).toEqual([
      expect.objectContaining({ name: "get_weather", call_id: expect.any(String), status: "completed" }),
    ]);
    expect(JSON.parse(calls[0]!.arguments)).toEqual({ city: expect.any(String) });

    const second = await client.responses.create({
      model,
      tools: [tool],
      input: [
        ...input,
        ...calls,
        { type: "function_call_output", call_id: calls[0]!.call_id, output: '{"celsius":17}' },
      ],
    });
    expect(second.output_text.length).toBeGreaterThan(0);
    expect(second.output.some((item) => item.type === "function_call")).toBe(false);
  });

  it("given a required tool, when streamed, then finalResponse() carries the JSON reply's call", async () => {
    const client = harness.openai(apiKey);
    const request = {
      model,
      input: "Weather in Incheon?",
      tools: [tool],
      tool_choice: "required" as const,
    };
    const json = await client.responses.create(request);
    const streamed = await client.responses.stream(request).finalResponse();

    const calls = (output: typeof json.output) =>
      output.flatMap((item) =>
        item.type === "function_call" ? [[item.name, JSON.parse(item.arguments)]] : [],
      );
    expect(calls(json.output)).toEqual([["get_weather", { city: expect.any(String) }]]);
    expect(calls(streamed.output)).toEqual(calls(json.output));
  });

  it("given a json_schema text format, then responses.parse reads an object of the schema", async () => {
    const forecast = z.object({ city: z.string(), celsius: z.number(), sunny: z.boolean() });
    const response = await harness.openai(apiKey).responses.parse({
      model,
      input: "Forecast for Ulsan as JSON.",
      text: { format: zodTextFormat(forecast, "forecast") },
    });

    expect(forecast.safeParse(response.output_parsed).success).toBe(true);
  });

  it("given an input_image, then the upstream receives it in its own words", async () => {
    const response = await harness.openai(apiKey).responses.create({
      model,
      input: [
        {
          role: "user",
          content: [
            { type: "input_text", text: "What is in this picture?" },
            { type: "input_image", image_url: `data:image/png;base64,${pixelPng}`, detail: "auto" },
          ],
        },
      ],
    });

    expect(response.output_text.length).toBeGreaterThan(0);
    const body = harness.simulator.lastRequest()!.body as Body;
    expect(protocolCase.carriedImage(body)).toEqual({ mediaType: "image/png", data: pixelPng });
  });
  it("given an input_image's detail low, then a protocol with the hint receives it, and one without refuses it by name before any upstream call", async () => {
    const sent = harness.openai(apiKey).responses.create({
      model,
      input: [
        {
          role: "user",
          content: [
            { type: "input_text", text: "What is in this picture?" },
            { type: "input_image", image_url: `data:image/png;base64,${pixelPng}`, detail: "low" },
          ],
        },
      ],
    });

    if (protocolCase.carriedDetail) {
      await sent;
      expect(protocolCase.carriedDetail(harness.simulator.lastRequest()!.body as Body)).toBe("low");
    } else {
      await expect(sent).rejects.toMatchObject({
        constructor: OpenAI.BadRequestError,
        message: `400 input: input_image.detail: "low" is not supported by ${model}, which takes images at its own resolution; send "auto" or leave it out`,
      });
      expect(harness.simulator.recordedRequests()).toHaveLength(0);
    }
  });
});
