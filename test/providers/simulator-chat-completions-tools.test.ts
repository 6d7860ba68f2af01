import OpenAI from "openai";
import { zodResponseFormat } from "openai/helpers/zod";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { simulatedTokensPerImage } from "../../src/providers/simulator/simulated-turn";
import { type Simulator, startSimulator } from "../../src/providers/simulator/simulator";
import { timeTool, weatherTool } from "../support/chat-completions-tools";

/**
 * The simulator's chat-completions tool calls, structured output and images, checked with the official
 * `openai` client and its own helpers (stream accumulation, the tool runner, zod parsing): if the fake
 * drifted from the protocol's shapes, these helpers would fail, not only our adapter.
 */

let simulator: Simulator;

beforeAll(async () => {
  simulator = await startSimulator();
});
afterAll(() => simulator.close());
beforeEach(() => {
  simulator.setFault(undefined);
  simulator.clearRecordedRequests();
});

const client = () => new OpenAI({ apiKey: "test-key", baseURL: `${simulator.url}/v1`, maxRetries: 0 });

const question = [{ role: "user" as const, content: "Weather and time in Seoul?" }];

describe("openai client against the simulator: chat-completions tool calls", () => {
  it("given tools and a user turn, then create returns both calls, content null and finish_reason tool_calls", async () => {
    const completion = await client().chat.completions.create({
      model: "alpha-5.4",
      messages: question,
      tools: [weatherTool, timeTool],
    });
    const choice = completion.choices[0]!;
    expect(choice.finish_reason).toBe("tool_calls");
    expect(choice.message.content).toBeNull();
    expect(choice.message.tool_calls).toEqual([
      {
        id: expect.stringMatching(/^call_/),
        type: "function",
        function: { name: "get_weather", arguments: expect.any(String) },
      },
      {
        id: expect.stringMatching(/^call_/),
        type: "function",
        function: { name: "get_time", arguments: expect.any(String) },
      },
    ]);
    const weatherArguments = JSON.parse(
      (choice.message.tool_calls![0] as { function: { arguments: string } }).function.arguments,
    );
    expect(weatherArguments).toEqual({ city: expect.any(String), unit: "celsius" });
    expect(completion.usage!.completion_tokens).toBeGreaterThan(0);
  });

  it("given parallel_tool_calls false, then only the first tool is called", async () => {
    const completion = await client().chat.completions.create({
      model: "alpha-5.4",
      messages: question,
      tools: [weatherTool, timeTool],
      parallel_tool_calls: false,
    });
    expect(completion.choices[0]!.message.tool_calls).toHaveLength(1);
  });

  it("given a stream, then stream().finalChatCompletion() accumulates the same calls as the JSON reply", async () => {
    const request = { model: "alpha-5.4", messages: question, tools: [weatherTool, timeTool] };
    const json = await client().chat.completions.create(request);
    const argumentsDone: string[] = [];
    const final = await client()
      .chat.completions.stream({ ...request, stream_options: { include_usage: true } })
      .on("tool_calls.function.arguments.done", (event) => argumentsDone.push(event.name))
      .finalChatCompletion();

    expect(final.choices[0]!.finish_reason).toBe("tool_calls");
    expect(final.choices[0]!.message.tool_calls).toEqual(json.choices[0]!.message.tool_calls);
    expect(argumentsDone).toEqual(["get_weather", "get_time"]);
    expect(final.usage).toEqual(json.usage);
  });

  it("given two tools, then runTools calls both, sends their results back and ends on the model's text", async () => {
    const calls: string[] = [];
    const runner = client().chat.completions.runTools({
      model: "alpha-5.4",
      messages: question,
      tools: [
        {
          ...weatherTool,
          function: {
            ...weatherTool.function,
            parse: JSON.parse,
            function: (args: { city: string }) => {
              calls.push(`weather:${args.city}`);
              return { celsius: 21 };
            },
          },
        },
        {
          ...timeTool,
          function: {
            ...timeTool.function,
            parse: JSON.parse,
            function: (args: { city: string }) => {
              calls.push(`time:${args.city}`);
              return "14:05";
            },
          },
        },
      ],
    });
    const text = await runner.finalContent();

    expect(calls).toHaveLength(2);
    expect(text!.length).toBeGreaterThan(0);
    const second = simulator.lastRequest()!.body as { messages: { role: string; tool_call_id?: string }[] };
    expect(second.messages.map((message) => message.role)).toEqual(["user", "assistant", "tool", "tool"]);
  });
});

describe("openai client against the simulator: structured output and images", () => {
  it("given a json_schema response_format, then chat.completions.parse reads a value of the zod schema", async () => {
    const answer = z.object({ city: z.string(), celsius: z.number(), sunny: z.boolean() });
    const completion = await client().chat.completions.parse({
      model: "alpha-5.4",
      messages: question,
      response_format: zodResponseFormat(answer, "weather"),
    });
    expect(answer.parse(completion.choices[0]!.message.parsed)).toEqual(
      completion.choices[0]!.message.parsed,
    );
    expect(completion.choices[0]!.finish_reason).toBe("stop");
  });

  it("given image parts, then each costs the simulated image tokens in the prompt", async () => {
    const text = { type: "text" as const, text: "What is this?" };
    const withoutImage = await client().chat.completions.create({
      model: "alpha-5.4",
      messages: [{ role: "user", content: [text] }],
    });
    const withImages = await client().chat.completions.create({
      model: "alpha-5.4",
      messages: [
        {
          role: "user",
          content: [
            text,
            { type: "image_url", image_url: { url: "https://example.com/a.png", detail: "low" } },
            { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } },
          ],
        },
      ],
    });
    expect(withImages.usage!.prompt_tokens - withoutImage.usage!.prompt_tokens).toBe(
      2 * simulatedTokensPerImage,
    );
  });

  it("given tool_choice or parallel_tool_calls without tools, then it refuses them as the upstream does", async () => {
    for (const extra of [{ tool_choice: "auto" as const }, { parallel_tool_calls: true }]) {
      await expect(
        client().chat.completions.create({ model: "alpha-5.4", messages: question, ...extra }),
      ).rejects.toMatchObject({ status: 400, message: expect.stringContaining("only allowed when 'tools'") });
    }
  });
});
