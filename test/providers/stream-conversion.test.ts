import { describe, expect, it } from "vitest";
import { convertChatCompletionsStream } from "../../src/providers/chat-completions/convert-chat-completions-stream";
import { convertGenerateContentStream } from "../../src/providers/generate-content/convert-generate-content-stream";
import type { ServerSentEvent } from "../../src/providers/http/server-sent-events";
import { convertMessagesStream } from "../../src/providers/messages/convert-messages-stream";
import { type GenerationStreamPart, UpstreamFailedError } from "../../src/providers/provider";
import { asAsync } from "./support/stream-helpers";

const chunk = (content: string) => ({
  data: JSON.stringify({ choices: [{ index: 0, delta: { content }, finish_reason: null }] }),
  event: undefined,
});
const finish: ServerSentEvent = {
  data: JSON.stringify({ choices: [{ index: 0, delta: {}, finish_reason: "stop" }] }),
  event: undefined,
};
const usage: ServerSentEvent = {
  data: JSON.stringify({ choices: [], usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 } }),
  event: undefined,
};
const failure: ServerSentEvent = {
  data: JSON.stringify({ error: { message: "overloaded" } }),
  event: undefined,
};

async function batchesOf(events: ServerSentEvent[][]) {
  const batches: unknown[][] = [];
  try {
    for await (const batch of convertChatCompletionsStream(asAsync(events))) batches.push(batch);
  } catch (error) {
    return { batches, error };
  }
  return { batches, error: undefined };
}

describe("stream conversion in batches", () => {
  it("given the events of two reads, then the parts of each read arrive together and the closing ones last", async () => {
    const { batches, error } = await batchesOf([
      [chunk("Hel"), chunk("lo")],
      [finish, usage],
    ]);
    expect(error).toBeUndefined();
    expect(batches).toEqual([
      [
        { type: "text-delta", text: "Hel" },
        { type: "text-delta", text: "lo" },
      ],
      [
        {
          type: "usage",
          usage: { inputTokens: 3, cachedInputTokens: null, outputTokens: 2, reasoningTokens: null },
        },
        { type: "finish", finishReason: "stop" },
      ],
    ]);
  });

  it("given a read whose events carry no text, then no empty batch is yielded for it", async () => {
    const { batches } = await batchesOf([[chunk("a")], [finish], [{ data: "[DONE]", event: undefined }]]);
    expect(batches).toEqual([
      [{ type: "text-delta", text: "a" }],
      [{ type: "finish", finishReason: "stop" }],
    ]);
  });

  it("given a failure after deltas in the same read, then those deltas are yielded before the failure", async () => {
    const { batches, error } = await batchesOf([[chunk("one"), chunk("two"), failure, chunk("never")]]);
    expect(batches).toEqual([
      [
        { type: "text-delta", text: "one" },
        { type: "text-delta", text: "two" },
      ],
    ]);
    expect(error).toBeInstanceOf(UpstreamFailedError);
    expect((error as Error).message).toContain("overloaded");
  });

  it("given a body that ends before the finish, then the deltas stand and the stream fails as cut short", async () => {
    const { batches, error } = await batchesOf([[chunk("partial")]]);
    expect(batches).toEqual([[{ type: "text-delta", text: "partial" }]]);
    expect(error).toMatchObject({ reason: "malformed" });
  });

  describe("input counts reported before the end", () => {
    const messagesEvent = (type: string, fields: object = {}): ServerSentEvent => ({
      event: type,
      data: JSON.stringify({ type, ...fields }),
    });
    const messageStart = messagesEvent("message_start", {
      message: { usage: { input_tokens: 30, cache_read_input_tokens: 20, output_tokens: 1 } },
    });
    const textDelta = (text: string) =>
      messagesEvent("content_block_delta", { index: 0, delta: { type: "text_delta", text } });
    const inputUsage: GenerationStreamPart = {
      type: "input-usage",
      usage: { inputTokens: 50, cachedInputTokens: 20 },
    };

    async function messagesBatchesOf(events: ServerSentEvent[][]) {
      const batches: GenerationStreamPart[][] = [];
      try {
        for await (const batch of convertMessagesStream(asAsync(events))) batches.push(batch);
      } catch (error) {
        return { batches, error };
      }
      return { batches, error: undefined };
    }

    it("given message_start in a read of its own, then its input counts lead the next read's output, once", async () => {
      const { batches } = await messagesBatchesOf([[messageStart], [textDelta("Hel")], [textDelta("lo")]]);
      expect(batches.slice(0, 2)).toEqual([
        [inputUsage, { type: "text-delta", text: "Hel" }],
        [{ type: "text-delta", text: "lo" }],
      ]);
    });

    it("given message_start and then a failure before any output, then nothing is yielded: the attempt did not begin its answer", async () => {
      const { batches, error } = await messagesBatchesOf([
        [messageStart],
        [messagesEvent("error", { error: { type: "overloaded_error", message: "Overloaded" } })],
      ]);
      expect(batches).toEqual([]);
      expect(error).toBeInstanceOf(UpstreamFailedError);
    });

    it("given generateContent chunks repeating the same prompt count, then it leads the first output only", async () => {
      const chunkOf = (text: string, candidatesTokenCount: number): ServerSentEvent => ({
        event: undefined,
        data: JSON.stringify({
          candidates: [{ content: { role: "model", parts: [{ text }] } }],
          usageMetadata: { promptTokenCount: 40, candidatesTokenCount },
        }),
      });
      const batches: GenerationStreamPart[][] = [];
      await expect(
        (async () => {
          for await (const batch of convertGenerateContentStream(
            asAsync([[chunkOf("a", 1)], [chunkOf("b", 2)]]),
          ))
            batches.push(batch);
        })(),
      ).rejects.toMatchObject({ reason: "malformed" });
      expect(batches).toEqual([
        [
          { type: "input-usage", usage: { inputTokens: 40, cachedInputTokens: null } },
          { type: "text-delta", text: "a" },
        ],
        [{ type: "text-delta", text: "b" }],
      ]);
    });
  });
});
