import { countTokens } from "gpt-tokenizer";
import { describe, expect, it } from "vitest";
import { textMessage } from "../../src/providers/message-text";
import { testApiKey, useSimulator } from "./support/simulator-fixture";
import { collectStream, neverAborted, simpleRequest, textOf } from "./support/stream-helpers";

const { simulator, adapter } = useSimulator();

describe("generate-content adapter against the simulator", () => {
  it("given a conversation, then system goes to systemInstruction, assistant becomes model, no generationConfig", async () => {
    const request = {
      upstreamModelId: "beta-3-flash",
      messages: [
        { role: "system" as const, content: "Be terse." },
        textMessage("user", "Name a river."),
        textMessage("assistant", "The Han."),
        textMessage("user", "Another?"),
      ],
    };
    const result = await adapter("generate-content").generate(request, neverAborted());

    const received = simulator().lastRequest();
    expect(received?.path).toBe("/v1beta/models/beta-3-flash:generateContent");
    expect(received?.headers["x-goog-api-key"]).toBe(testApiKey);
    expect(received?.headers.authorization).toBeUndefined();
    expect(received?.body).toEqual({
      contents: [
        { role: "user", parts: [{ text: "Name a river." }] },
        { role: "model", parts: [{ text: "The Han." }] },
        { role: "user", parts: [{ text: "Another?" }] },
      ],
      systemInstruction: { parts: [{ text: "Be terse." }] },
    });
    expect(result.usage).toEqual({
      inputTokens: expect.any(Number),
      cachedInputTokens: 0,
      outputTokens: countTokens(result.text),
      reasoningTokens: 0,
    });
  });

  it("given sampling parameters and a limit, then they go to generationConfig", async () => {
    const request = { ...simpleRequest, temperature: 0.7, topP: 0.95, maxOutputTokens: 5 };
    const result = await adapter("generate-content").generate(request, neverAborted());
    expect(simulator().lastRequest()?.body).toMatchObject({
      generationConfig: { temperature: 0.7, topP: 0.95, maxOutputTokens: 5 },
    });
    expect(result.finishReason).toBe("length");
  });

  it("given a stream, then it calls :streamGenerateContent?alt=sse and keeps the last chunk's usage", async () => {
    const json = await adapter("generate-content").generate(simpleRequest, neverAborted());
    const { parts, error } = await collectStream(
      adapter("generate-content").stream(simpleRequest, neverAborted()),
    );

    expect(error).toBeUndefined();
    expect(simulator().lastRequest()?.path).toBe("/v1beta/models/test-model:streamGenerateContent?alt=sse");
    expect(textOf(parts)).toBe(json.text);
    expect(parts.slice(-2)).toEqual([
      { type: "usage", usage: json.usage },
      { type: "finish", finishReason: "stop" },
    ]);
  });
});
