import { countTokens } from "gpt-tokenizer";
import { describe, expect, it } from "vitest";
import { testApiKey, useSimulator } from "./support/simulator-fixture";
import { collectStream, neverAborted, simpleRequest, textOf } from "./support/stream-helpers";

const { simulator, adapter } = useSimulator();

describe("chat-completions adapter against the simulator", () => {
  it("given a JSON request, then it posts to {baseUrl}/chat/completions with a bearer key and the messages as they are", async () => {
    const result = await adapter("chat-completions").generate(simpleRequest, neverAborted());

    const received = simulator().lastRequest();
    expect(received?.path).toBe("/chat/completions");
    expect(received?.headers.authorization).toBe(`Bearer ${testApiKey}`);
    expect(received?.body).toEqual({
      model: "test-model",
      messages: [
        { role: "system", content: "Answer briefly." },
        { role: "user", content: "Describe a quiet harbor at dawn." },
      ],
    });
    expect(result.text.length).toBeGreaterThan(0);
    expect(result.finishReason).toBe("stop");
    expect(result.usage).toEqual({
      inputTokens:
        3 + (3 + countTokens("Answer briefly.")) + (3 + countTokens("Describe a quiet harbor at dawn.")),
      cachedInputTokens: 0,
      outputTokens: countTokens(result.text),
      reasoningTokens: 0,
    });
  });

  it("given a base URL with a path, then the protocol path is appended to it", async () => {
    await adapter("chat-completions", { baseUrl: `${simulator().url}/v1/` }).generate(
      simpleRequest,
      neverAborted(),
    );
    expect(simulator().lastRequest()?.path).toBe("/v1/chat/completions");
  });

  it("given sampling parameters and a limit, then they are sent as temperature, top_p and max_completion_tokens", async () => {
    const request = { ...simpleRequest, temperature: 0.2, topP: 0.9, maxOutputTokens: 5 };
    const result = await adapter("chat-completions").generate(request, neverAborted());

    expect(simulator().lastRequest()?.body).toMatchObject({
      temperature: 0.2,
      top_p: 0.9,
      max_completion_tokens: 5,
    });
    expect(simulator().lastRequest()?.body).not.toHaveProperty("max_tokens");
    expect(result.finishReason).toBe("length");
    expect(result.usage?.outputTokens).toBeLessThanOrEqual(5);
  });

  it("given an upstream that knows only max_tokens, then the option sends that field instead", async () => {
    const chatAdapter = adapter("chat-completions", { chatCompletionsMaxTokensField: "max_tokens" });
    await chatAdapter.generate({ ...simpleRequest, maxOutputTokens: 7 }, neverAborted());
    expect(simulator().lastRequest()?.body).toMatchObject({ max_tokens: 7 });
    expect(simulator().lastRequest()?.body).not.toHaveProperty("max_completion_tokens");
  });

  it("given a stream, then it always asks for usage and yields the deltas, then usage, then finish", async () => {
    const json = await adapter("chat-completions").generate(simpleRequest, neverAborted());
    const { parts, error } = await collectStream(
      adapter("chat-completions").stream(simpleRequest, neverAborted()),
    );

    expect(error).toBeUndefined();
    expect(simulator().lastRequest()?.body).toMatchObject({
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(textOf(parts)).toBe(json.text);
    expect(parts.slice(-2)).toEqual([
      { type: "usage", usage: json.usage },
      { type: "finish", finishReason: "stop" },
    ]);
    expect(parts.slice(0, -2).every((part) => part.type === "text-delta")).toBe(true);
  });
});
