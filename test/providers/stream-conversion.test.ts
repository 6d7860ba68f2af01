import { describe, expect, it } from "vitest";
import { convertChatCompletionsStream } from "../../src/providers/chat-completions/convert-chat-completions-stream";
import type { ServerSentEvent } from "../../src/providers/http/server-sent-events";
import { UpstreamFailedError } from "../../src/providers/provider";
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
});
