import { describe, expect, it } from "vitest";
import { parseResponsesRequest } from "../../../src/gateway/wire/responses-request";
import { expectValidationError } from "./support/rejection";

const valid = { model: "alpha-5.4-pro", input: "Why do rivers bend?" };
const parse = (fields: Record<string, unknown>) => parseResponsesRequest({ ...valid, ...fields });

describe("parseResponsesRequest: a valid body", () => {
  it("reads a string input as the user's one message, with no parameter the client did not send", () => {
    expect(parseResponsesRequest(valid)).toStrictEqual({
      model: "alpha-5.4-pro",
      messages: [{ role: "user", content: [{ type: "text", text: "Why do rivers bend?" }] }],
      stream: false,
    });
  });

  it("turns instructions into a leading system message", () => {
    expect(parse({ instructions: "Answer in one paragraph." }).messages).toStrictEqual([
      { role: "system", content: "Answer in one paragraph." },
      { role: "user", content: [{ type: "text", text: "Why do rivers bend?" }] },
    ]);
  });

  it("reads message items with and without type, every role, and joins text parts of every text type", () => {
    const parsed = parse({
      input: [
        { role: "developer", content: "Be brief." },
        { type: "message", role: "system", content: [{ type: "input_text", text: "English only." }] },
        {
          role: "user",
          content: [
            { type: "input_text", text: "Why do " },
            { type: "text", text: "rivers bend?" },
          ],
        },
        {
          type: "message",
          role: "assistant",
          content: [{ type: "output_text", text: "Erosion.", annotations: [] }],
        },
        { role: "user", content: "More?" },
      ],
    });
    expect(parsed.messages).toStrictEqual([
      { role: "system", content: "Be brief." },
      { role: "system", content: "English only." },
      { role: "user", content: [{ type: "text", text: "Why do rivers bend?" }] },
      { role: "assistant", content: "Erosion.", toolCalls: [] },
      { role: "user", content: [{ type: "text", text: "More?" }] },
    ]);
  });

  it("keeps the parameters the client sent, and treats nulls as not sent", () => {
    expect(parse({ stream: true, temperature: 0, top_p: 1, max_output_tokens: 64 })).toStrictEqual({
      ...parseResponsesRequest(valid),
      stream: true,
      temperature: 0,
      topP: 1,
      maxOutputTokens: 64,
    });
    expect(
      parse({ instructions: null, stream: null, temperature: null, top_p: null, max_output_tokens: null }),
    ).toStrictEqual(parseResponsesRequest(valid));
  });

  it("ignores fields it does not know", () => {
    const parsed = parse({
      store: true,
      metadata: { a: "b" },
      user: "someone",
      text: { format: { type: "text" } },
    });
    expect(parsed).toStrictEqual(parseResponsesRequest(valid));
  });
});

describe("parseResponsesRequest: rejections are 400/100 naming the field", () => {
  const temperatureRange = "temperature: must be a number from 0 to 2 inclusive";
  const topPRange = "top_p: must be a number from 0 to 1 inclusive";
  it.each<[string, Record<string, unknown>, string]>([
    ["temperature below 0", { temperature: -0.1 }, temperatureRange],
    ["temperature above 2", { temperature: 2.01 }, temperatureRange],
    ["top_p below 0", { top_p: -0.5 }, topPRange],
    ["top_p above 1", { top_p: 1.5 }, topPRange],
    ["max_output_tokens 0", { max_output_tokens: 0 }, "max_output_tokens: must be a positive integer"],
    [
      "max_output_tokens negative",
      { max_output_tokens: -1 },
      "max_output_tokens: must be a positive integer",
    ],
    [
      "max_output_tokens fractional",
      { max_output_tokens: 2.5 },
      "max_output_tokens: must be a positive integer",
    ],
    ["stream as a number", { stream: 1 }, "stream: must be a boolean"],
    ["instructions as a number", { instructions: 5 }, "instructions: must be a string"],
    ["model missing", { model: undefined }, "model: is required"],
    ["model empty", { model: "" }, "model: must not be empty"],
    ["input missing", { input: undefined }, "input: is required"],
    ["input as a number", { input: 5 }, "input: must be a string or an array of message items"],
    ["input empty", { input: [] }, "input: must contain at least one message item"],
    [
      "a function call output item",
      { input: [{ type: "function_call_output", call_id: "c", output: "42" }] },
      'input.0.type: must be "message": only message items are supported',
    ],
    [
      "an item with a tool role",
      { input: [{ role: "tool", content: "42" }] },
      'input.0.role: must be one of "system", "developer", "user", "assistant"',
    ],
    [
      "an image part",
      { input: [{ role: "user", content: [{ type: "input_image", image_url: "x" }] }] },
      'input.0.content.0.type: must be "input_text" or "output_text" or "text": only text content is supported',
    ],
    [
      "an item without content",
      { input: [{ role: "user" }] },
      "input.0.content: must be a string or an array of text parts",
    ],
  ])("%s", (_case, fields, message) => {
    expectValidationError(() => parse(fields), message);
  });

  it.each([null, ["Why?"], "Why?"])("a body that is not an object: %j", (body) => {
    expectValidationError(() => parseResponsesRequest(body), "request body must be a JSON object");
  });
});
