import { countTokens } from "gpt-tokenizer";
import { describe, expect, it } from "vitest";
import { textMessage } from "../../src/providers/message-text";
import { testApiKey, useSimulator } from "./support/simulator-fixture";
import { collectStream, neverAborted, simpleRequest, textOf } from "./support/stream-helpers";

const { simulator, adapter } = useSimulator();

describe("responses adapter against the simulator", () => {
  it("given leading system messages, then they become instructions and the rest stays input, unstored", async () => {
    const request = {
      upstreamModelId: "test-model",
      messages: [
        { role: "system" as const, content: "Be terse." },
        { role: "system" as const, content: "Use metric units." },
        textMessage("user", "How tall is the tower?"),
        textMessage("assistant", "Three hundred metres."),
        { role: "system" as const, content: "Now answer in French." },
        textMessage("user", "And the bridge?"),
      ],
    };
    const result = await adapter("responses").generate(request, neverAborted());

    const received = simulator().lastRequest();
    expect(received?.path).toBe("/responses");
    expect(received?.headers.authorization).toBe(`Bearer ${testApiKey}`);
    expect(received?.body).toEqual({
      model: "test-model",
      instructions: "Be terse.\n\nUse metric units.",
      input: [
        { role: "user", content: "How tall is the tower?" },
        { role: "assistant", content: "Three hundred metres." },
        { role: "system", content: "Now answer in French." },
        { role: "user", content: "And the bridge?" },
      ],
      store: false,
    });
    expect(result.finishReason).toBe("stop");
    expect(result.usage).toEqual({
      inputTokens: expect.any(Number),
      cachedInputTokens: 0,
      outputTokens: countTokens(result.text),
      reasoningTokens: 0,
    });
  });

  it("given no system message, then no instructions are sent", async () => {
    await adapter("responses").generate(
      { upstreamModelId: "m", messages: [textMessage("user", "hi")] },
      neverAborted(),
    );
    expect(simulator().lastRequest()?.body).not.toHaveProperty("instructions");
  });

  it("given a limit and sampling parameters, then max_output_tokens is sent and a cut answer finishes with length", async () => {
    const request = { ...simpleRequest, temperature: 0.5, topP: 0.5, maxOutputTokens: 4 };
    const result = await adapter("responses").generate(request, neverAborted());
    expect(simulator().lastRequest()?.body).toMatchObject({
      temperature: 0.5,
      top_p: 0.5,
      max_output_tokens: 4,
    });
    expect(result.finishReason).toBe("length");
  });

  it("given a stream, then it yields the deltas, the usage of response.completed, then finish", async () => {
    const json = await adapter("responses").generate(simpleRequest, neverAborted());
    const { parts, error } = await collectStream(adapter("responses").stream(simpleRequest, neverAborted()));

    expect(error).toBeUndefined();
    expect(simulator().lastRequest()?.body).toMatchObject({ stream: true });
    expect(textOf(parts)).toBe(json.text);
    expect(parts.slice(-2)).toEqual([
      { type: "usage", usage: json.usage },
      { type: "finish", finishReason: "stop" },
    ]);
  });

  it("given a cut stream (response.incomplete), then the finish is length", async () => {
    const { parts } = await collectStream(
      adapter("responses").stream({ ...simpleRequest, maxOutputTokens: 3 }, neverAborted()),
    );
    expect(parts.at(-1)).toEqual({ type: "finish", finishReason: "length" });
  });
});
