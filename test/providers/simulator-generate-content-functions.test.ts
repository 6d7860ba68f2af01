import { FunctionCallingConfigMode, GoogleGenAI, type Part, ThinkingLevel } from "@google/genai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Simulator, startSimulator } from "../../src/providers/simulator/simulator";

/**
 * The simulator's function calling, structured output and media checked with the protocol's own official
 * client: the requests are the client's, so the simulator must accept exactly what the real API accepts, and
 * the client's own accessors (`functionCalls`, `text`) must read the replies.
 */

const weather = {
  name: "get_weather",
  description: "The weather in a city",
  parametersJsonSchema: {
    type: "object",
    properties: { city: { type: "string" }, unit: { type: "string", enum: ["celsius", "fahrenheit"] } },
    required: ["city"],
  },
};
const time = {
  name: "get_time",
  parametersJsonSchema: { type: "object", properties: { zone: { type: "string" } } },
};
const question = "What is the weather in Seoul?";

let simulator: Simulator;
beforeAll(async () => {
  simulator = await startSimulator();
});
afterAll(() => simulator.close());

const client = () => new GoogleGenAI({ apiKey: "test-key", httpOptions: { baseUrl: simulator.url } });

describe("google genai client: function calling against the simulator", () => {
  it("given function declarations and the user's turn, then generateContent answers with both calls, args objects, a signature on the first", async () => {
    const response = await client().models.generateContent({
      model: "beta-3-flash",
      contents: question,
      config: { tools: [{ functionDeclarations: [weather, time] }] },
    });

    expect(response.functionCalls).toEqual([
      { name: "get_weather", args: { city: expect.any(String), unit: "celsius" } },
      { name: "get_time", args: { zone: expect.any(String) } },
    ]);
    const parts = response.candidates?.[0]?.content?.parts ?? [];
    expect(parts.map((part) => typeof part.thoughtSignature)).toEqual(["string", "undefined"]);
    expect(response.candidates?.[0]?.finishReason).toBe("STOP");
    expect(response.usageMetadata?.candidatesTokenCount).toBeGreaterThan(0);
  });

  it("given mode ANY limited to one name, then generateContentStream sends that call whole in one chunk", async () => {
    const stream = await client().models.generateContentStream({
      model: "beta-3-flash",
      contents: question,
      config: {
        tools: [{ functionDeclarations: [weather, time] }],
        toolConfig: {
          functionCallingConfig: { mode: FunctionCallingConfigMode.ANY, allowedFunctionNames: ["get_time"] },
        },
      },
    });
    const calls = [];
    let finish: string | undefined;
    for await (const chunk of stream) {
      calls.push(...(chunk.functionCalls ?? []));
      finish = chunk.candidates?.[0]?.finishReason ?? finish;
    }
    expect(calls).toEqual([{ name: "get_time", args: { zone: expect.any(String) } }]);
    expect(finish).toBe("STOP");
  });

  it("given mode ANY with several allowed names, then it calls only among those", async () => {
    const news = { name: "get_news", parametersJsonSchema: { type: "object", properties: {} } };
    const response = await client().models.generateContent({
      model: "beta-3-flash",
      contents: question,
      config: {
        tools: [{ functionDeclarations: [news, weather, time] }],
        toolConfig: {
          functionCallingConfig: {
            mode: FunctionCallingConfigMode.ANY,
            allowedFunctionNames: ["get_time", "get_weather"],
          },
        },
      },
    });
    expect(response.functionCalls?.map((call) => call.name)).toEqual(["get_weather", "get_time"]);
  });

  it("given the model's call replayed with its signature and the function's response, then it answers in text", async () => {
    const first = await client().models.generateContent({
      model: "beta-3-flash",
      contents: question,
      config: { tools: [{ functionDeclarations: [weather] }] },
    });
    const modelTurn = first.candidates?.[0]?.content;
    const response = await client().models.generateContent({
      model: "beta-3-flash",
      contents: [
        { role: "user", parts: [{ text: question }] },
        modelTurn!,
        {
          role: "user",
          parts: [{ functionResponse: { name: "get_weather", response: { output: "Sunny, 21 °C" } } }],
        },
      ],
      config: { tools: [{ functionDeclarations: [weather] }] },
    });
    expect(response.functionCalls).toBeUndefined();
    expect(response.text).toMatch(/\w/);
  });

  it("given a replayed call stripped of its signature, then it is refused with 400 as a thinking model does", async () => {
    const call: Part = { functionCall: { name: "get_weather", args: { city: "Seoul" } } };
    await expect(
      client().models.generateContent({
        model: "beta-3-flash",
        contents: [
          { role: "user", parts: [{ text: question }] },
          { role: "model", parts: [call] },
          {
            role: "user",
            parts: [{ functionResponse: { name: "get_weather", response: { output: "Sunny" } } }],
          },
        ],
        config: { tools: [{ functionDeclarations: [weather] }] },
      }),
    ).rejects.toMatchObject({ status: 400, message: expect.stringContaining("thought_signature") });
  });

  it("given mode NONE, then it answers in text though functions are declared", async () => {
    const response = await client().models.generateContent({
      model: "beta-3-flash",
      contents: question,
      config: {
        tools: [{ functionDeclarations: [weather] }],
        toolConfig: { functionCallingConfig: { mode: FunctionCallingConfigMode.NONE } },
      },
    });
    expect(response.functionCalls).toBeUndefined();
    expect(response.text).toMatch(/\w/);
  });
});

describe("google genai client: output, thinking and media against the simulator", () => {
  it("given a JSON response type and schema, then the text is an instance of the schema", async () => {
    const response = await client().models.generateContent({
      model: "beta-3-flash",
      contents: "Name a city.",
      config: {
        responseMimeType: "application/json",
        responseJsonSchema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
        thinkingConfig: { thinkingLevel: ThinkingLevel.LOW },
        seed: 7,
        stopSequences: ["END"],
      },
    });
    expect(JSON.parse(response.text ?? "")).toEqual({ city: expect.any(String) });
  });

  it("given inline and file images, then each adds the simulated image tokens to the prompt", async () => {
    const text = { text: "Describe these." };
    const plain = await client().models.generateContent({ model: "beta-3-flash", contents: [text] });
    const withImages = await client().models.generateContent({
      model: "beta-3-flash",
      contents: [
        text,
        { inlineData: { mimeType: "image/png", data: "iVBORw0KGgo=" } },
        { fileData: { fileUri: "https://example.com/harbor.jpg", mimeType: "image/jpeg" } },
      ],
    });
    expect(withImages.usageMetadata?.promptTokenCount).toBe(
      (plain.usageMetadata?.promptTokenCount ?? 0) + 170,
    );
  });

  it("given both thinkingLevel and thinkingBudget, then it is refused with 400 as the API does", async () => {
    await expect(
      client().models.generateContent({
        model: "beta-3-flash",
        contents: "Hi",
        config: { thinkingConfig: { thinkingLevel: ThinkingLevel.HIGH, thinkingBudget: 1024 } },
      }),
    ).rejects.toMatchObject({ status: 400 });
  });
});
