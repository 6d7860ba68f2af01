import { countTokens } from "gpt-tokenizer";
import { describe, expect, it } from "vitest";
import { textMessage } from "../../src/providers/message-text";
import { messagesMaxTokensDefault } from "../../src/providers/messages/convert-to-messages-request";
import { testApiKey, useSimulator } from "./support/simulator-fixture";
import { collectStream, neverAborted, simpleRequest, textOf } from "./support/stream-helpers";

const { simulator, adapter } = useSimulator();

describe("messages adapter against the simulator", () => {
  it("given system messages and no limit, then system is top-level and max_tokens is the named default", async () => {
    const request = {
      upstreamModelId: "test-model",
      messages: [
        { role: "system" as const, content: "Be terse." },
        textMessage("user", "Name a river."),
        textMessage("assistant", "The Han."),
        { role: "system" as const, content: "Answer in Korean." },
        textMessage("user", "Another?"),
      ],
    };
    const result = await adapter("messages").generate(request, neverAborted());

    const received = simulator().lastRequest();
    expect(received?.path).toBe("/v1/messages");
    expect(received?.headers["x-api-key"]).toBe(testApiKey);
    expect(received?.headers["anthropic-version"]).toBe("2023-06-01");
    expect(received?.headers.authorization).toBeUndefined();
    expect(received?.body).toEqual({
      model: "test-model",
      max_tokens: messagesMaxTokensDefault,
      system: "Be terse.\n\nAnswer in Korean.",
      messages: [
        { role: "user", content: "Name a river." },
        { role: "assistant", content: "The Han." },
        { role: "user", content: "Another?" },
      ],
    });
    expect(messagesMaxTokensDefault).toBe(32_000);
    expect(result.usage).toEqual({
      inputTokens: expect.any(Number),
      cachedInputTokens: 0,
      outputTokens: countTokens(result.text),
      reasoningTokens: 0,
    });
  });

  it("given a limit and sampling parameters, then they are sent as max_tokens, temperature and top_p", async () => {
    const request = { ...simpleRequest, temperature: 0.3, topP: 0.8, maxOutputTokens: 6 };
    const result = await adapter("messages").generate(request, neverAborted());
    expect(simulator().lastRequest()?.body).toMatchObject({ max_tokens: 6, temperature: 0.3, top_p: 0.8 });
    expect(result.finishReason).toBe("length");
  });

  it("given a stream, then the provisional output count of message_start is replaced by message_delta's", async () => {
    const json = await adapter("messages").generate(simpleRequest, neverAborted());
    const { parts, error } = await collectStream(adapter("messages").stream(simpleRequest, neverAborted()));

    expect(error).toBeUndefined();
    expect(simulator().lastRequest()?.body).toMatchObject({ stream: true });
    expect(textOf(parts)).toBe(json.text);
    expect(json.usage?.outputTokens).toBeGreaterThan(1);
    expect(parts.slice(-2)).toEqual([
      { type: "usage", usage: json.usage },
      { type: "finish", finishReason: "stop" },
    ]);
  });
});
