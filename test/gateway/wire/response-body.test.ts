import { describe, expect, it } from "vitest";
import { apiErrors } from "../../../src/gateway/api-error";
import {
  createdResponseBodyOf,
  failedResponseBodyOf,
  inProgressResponseBodyOf,
  messageItemOf,
  outputTextPartOf,
  responseBodyOf,
} from "../../../src/gateway/wire/response-body";

const identity = { model: "alpha-5.4-pro", createdAtMs: 1_767_225_600_987 };
const reply = {
  ...identity,
  text: "Rivers bend.",
  toolCalls: [],
  finishReason: "stop" as const,
  usage: { inputTokens: 21, cachedInputTokens: 5, outputTokens: 11, reasoningTokens: 3 },
};
const item = (status: string, text: string) => ({
  id: "resp-1767225600987-msg",
  type: "message",
  status,
  role: "assistant",
  content: [{ type: "output_text", text, annotations: [] }],
});
const zeroUsage = {
  input_tokens: 0,
  input_tokens_details: { cached_tokens: 0 },
  output_tokens: 0,
  output_tokens_details: { reasoning_tokens: 0 },
  total_tokens: 0,
};

describe("responseBodyOf", () => {
  it("builds the body of interface.md plus status, error and incomplete_details", () => {
    expect(responseBodyOf(reply)).toStrictEqual({
      id: "resp-1767225600987",
      object: "response",
      created_at: 1767225600,
      status: "completed",
      error: null,
      incomplete_details: null,
      model: "alpha-5.4-pro",
      output_text: "Rivers bend.",
      output: [item("completed", "Rivers bend.")],
      usage: {
        input_tokens: 21,
        input_tokens_details: { cached_tokens: 5 },
        output_tokens: 11,
        output_tokens_details: { reasoning_tokens: 3 },
        total_tokens: 32,
      },
    });
  });

  it.each([
    ["stop", "completed", null],
    ["other", "completed", null],
    ["length", "incomplete", { reason: "max_output_tokens" }],
    ["content_filter", "incomplete", { reason: "content_filter" }],
  ] as const)(
    "after finish reason %s the response is %s and its item completed",
    (finishReason, status, details) => {
      const body = responseBodyOf({ ...reply, finishReason });
      expect(body.status).toBe(status);
      expect(body.incomplete_details).toStrictEqual(details);
      expect(body.output[0]?.status).toBe("completed");
    },
  );
});

describe("the stream's bodies", () => {
  it("response.created: empty text, zero usage, the item completed, the response in progress", () => {
    expect(createdResponseBodyOf(identity)).toStrictEqual({
      ...responseBodyOf(reply),
      status: "in_progress",
      output_text: "",
      output: [item("completed", "")],
      usage: zeroUsage,
    });
  });

  it("response.in_progress: no output yet, so the item added next lands at output_index 0", () => {
    expect(inProgressResponseBodyOf(identity)).toStrictEqual({
      ...createdResponseBodyOf(identity),
      output: [],
    });
  });

  it("response.failed: the text so far in an incomplete item, the error, no usage", () => {
    expect(
      failedResponseBodyOf(identity, "Rivers", apiErrors.upstreamFailed("upstream timed out"), [
        messageItemOf("resp-1767225600987-msg", "incomplete", [outputTextPartOf("Rivers")]),
      ]),
    ).toStrictEqual({
      ...responseBodyOf(reply),
      status: "failed",
      error: { code: "server_error", message: "upstream timed out" },
      output_text: "Rivers",
      output: [item("incomplete", "Rivers")],
      usage: null,
    });
  });
});

describe("responseBodyOf with tool calls", () => {
  const call = { id: "call_a", name: "get_weather", arguments: '{"city":"Seoul"}' };
  const callItem = {
    type: "function_call",
    id: "resp-1767225600987-fc0",
    call_id: "call_a",
    name: "get_weather",
    arguments: '{"city":"Seoul"}',
    status: "completed",
  };

  it("given text and calls, then the message item comes first, then one function_call item per call", () => {
    const body = responseBodyOf({
      ...reply,
      text: "Checking.",
      toolCalls: [call],
      finishReason: "tool_calls",
    });
    expect(body.status).toBe("completed");
    expect(body.output).toStrictEqual([item("completed", "Checking."), callItem]);
  });

  it("given calls only, then there is no message item", () => {
    const body = responseBodyOf({ ...reply, text: "", toolCalls: [call], finishReason: "tool_calls" });
    expect(body.output_text).toBe("");
    expect(body.output).toStrictEqual([callItem]);
  });
});
