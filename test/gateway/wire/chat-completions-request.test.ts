import { describe, expect, it } from "vitest";
import { parseChatCompletionsRequest } from "../../../src/gateway/wire/chat-completions-request";
import { expectValidationError } from "./support/rejection";

const valid = { model: "alpha-5.4", messages: [{ role: "user", content: "Why do rivers bend?" }] };
const parse = (fields: Record<string, unknown>) => parseChatCompletionsRequest({ ...valid, ...fields });

describe("parseChatCompletionsRequest: a valid body", () => {
  it("gives model, messages and stream false, and no parameter the client did not send", () => {
    const parsed = parseChatCompletionsRequest(valid);
    expect(parsed).toStrictEqual({
      model: "alpha-5.4",
      messages: [{ role: "user", content: [{ type: "text", text: "Why do rivers bend?" }] }],
      stream: false,
    });
  });

  it("keeps the parameters the client sent", () => {
    expect(parse({ stream: true, temperature: 0.7, top_p: 0.9, max_tokens: 256 })).toStrictEqual({
      ...parseChatCompletionsRequest(valid),
      stream: true,
      temperature: 0.7,
      topP: 0.9,
      maxOutputTokens: 256,
    });
  });

  it("treats explicit nulls as not sent", () => {
    const parsed = parse({
      stream: null,
      temperature: null,
      top_p: null,
      max_tokens: null,
      max_completion_tokens: null,
      stream_options: null,
    });
    expect(parsed).toStrictEqual(parseChatCompletionsRequest(valid));
  });

  it("ignores fields it does not know, at the top and inside messages", () => {
    const parsed = parse({
      n: 1,
      user: "someone",
      seed: 7,
      logit_bias: {},
      messages: [{ role: "user", content: "Hi", name: "ana" }],
    });
    expect(parsed).toStrictEqual({
      model: "alpha-5.4",
      messages: [{ role: "user", content: [{ type: "text", text: "Hi" }] }],
      stream: false,
    });
  });

  it("accepts stream_options and acts on none of it", () => {
    expect(parse({ stream: true, stream_options: { include_usage: false } })).toStrictEqual({
      ...parseChatCompletionsRequest(valid),
      stream: true,
    });
  });

  it("reads every role, developer as system, and joins text parts", () => {
    const parsed = parse({
      messages: [
        { role: "developer", content: "Be brief." },
        { role: "system", content: "Answer in English." },
        {
          role: "user",
          content: [
            { type: "text", text: "Why do " },
            { type: "text", text: "rivers bend?" },
          ],
        },
        { role: "assistant", content: [] },
      ],
    });
    expect(parsed.messages).toStrictEqual([
      { role: "system", content: "Be brief." },
      { role: "system", content: "Answer in English." },
      { role: "user", content: [{ type: "text", text: "Why do rivers bend?" }] },
      { role: "assistant", content: "", toolCalls: [] },
    ]);
  });

  it.each([
    [{ max_tokens: 100 }, 100],
    [{ max_completion_tokens: 100 }, 100],
    [{ max_tokens: 100, max_completion_tokens: 100 }, 100],
  ])("reads the output limit from %j", (fields, limit) => {
    expect(parse(fields).maxOutputTokens).toBe(limit);
  });
});

describe("parseChatCompletionsRequest: ranges at their edges", () => {
  it.each([
    ["temperature", 0],
    ["temperature", 2],
    ["temperature", 1.5],
    ["top_p", 0],
    ["top_p", 1],
    ["max_tokens", 1],
    ["max_tokens", Number.MAX_SAFE_INTEGER],
    ["max_completion_tokens", 1],
  ])("accepts %s %d", (field, value) => {
    expect(() => parse({ [field]: value })).not.toThrow();
  });
});

describe("parseChatCompletionsRequest: rejections are 400/100 naming the field", () => {
  const temperatureRange = "temperature: must be a number from 0 to 2 inclusive";
  const topPRange = "top_p: must be a number from 0 to 1 inclusive";
  it.each<[string, Record<string, unknown>, string]>([
    ["temperature below 0", { temperature: -0.1 }, temperatureRange],
    ["temperature above 2", { temperature: 2.01 }, temperatureRange],
    ["temperature as a string", { temperature: "1" }, temperatureRange],
    ["top_p below 0", { top_p: -0.01 }, topPRange],
    ["top_p above 1", { top_p: 1.01 }, topPRange],
    ["top_p as a boolean", { top_p: true }, topPRange],
    ["max_tokens 0", { max_tokens: 0 }, "max_tokens: must be a positive integer"],
    ["max_tokens negative", { max_tokens: -5 }, "max_tokens: must be a positive integer"],
    ["max_tokens fractional", { max_tokens: 1.5 }, "max_tokens: must be a positive integer"],
    ["max_tokens as a string", { max_tokens: "10" }, "max_tokens: must be a positive integer"],
    [
      "max_tokens beyond exact numbers",
      { max_tokens: 2 ** 53 },
      "max_tokens: must be at most 9007199254740991",
    ],
    [
      "max_completion_tokens 0",
      { max_completion_tokens: 0 },
      "max_completion_tokens: must be a positive integer",
    ],
    [
      "both limits, different",
      { max_tokens: 100, max_completion_tokens: 200 },
      "max_tokens: conflicts with max_completion_tokens; send only one of them",
    ],
    ["stream as a string", { stream: "yes" }, "stream: must be a boolean"],
    ["stream_options as a string", { stream_options: "usage" }, "stream_options: must be an object"],
    ["model missing", { model: undefined }, "model: is required"],
    ["model empty", { model: "" }, "model: must not be empty"],
    ["model as a number", { model: 5 }, "model: must be a string"],
    ["model null", { model: null }, "model: must be a string"],
    ["messages missing", { messages: undefined }, "messages: is required"],
    ["messages empty", { messages: [] }, "messages: must contain at least one message"],
    ["messages as a string", { messages: "hi" }, "messages: must be an array of messages"],
    [
      "a message that is not an object",
      { messages: [5] },
      "messages.0: must be an object with role and content",
    ],
    [
      "a tool message",
      { messages: [{ role: "tool", content: "42" }] },
      'messages.0.role: must be one of "system", "developer", "user", "assistant"',
    ],
    [
      "a message without role",
      { messages: [{ content: "hi" }] },
      'messages.0.role: must be one of "system", "developer", "user", "assistant"',
    ],
    [
      "a message without content",
      { messages: [{ role: "user" }] },
      "messages.0.content: must be a string or an array of text parts",
    ],
    [
      "null content",
      { messages: [{ role: "assistant", content: null }] },
      "messages.0.content: must be a string or an array of text parts",
    ],
    [
      "an image part",
      {
        messages: [
          { role: "user", content: "first" },
          {
            role: "user",
            content: [
              { type: "text", text: "see" },
              { type: "image_url", image_url: { url: "x" } },
            ],
          },
        ],
      },
      'messages.1.content.1.type: must be "text": only text content is supported',
    ],
    [
      "a text part without text",
      { messages: [{ role: "user", content: [{ type: "text" }] }] },
      "messages.0.content.0.text: must be a string",
    ],
  ])("%s", (_case, fields, message) => {
    expectValidationError(() => parse(fields), message);
  });

  it.each([null, [], "model=alpha-5.4", 42])("a body that is not an object: %j", (body) => {
    expectValidationError(() => parseChatCompletionsRequest(body), "request body must be a JSON object");
  });
});
