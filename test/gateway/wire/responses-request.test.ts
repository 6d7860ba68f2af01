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

  it("reads an earlier reply's refusal part, sent back as input, as the assistant's words", () => {
    const declined = {
      id: "resp-1767225600123-msg",
      type: "message",
      status: "completed",
      role: "assistant",
      content: [
        { type: "output_text", text: "Locks are mechanisms. ", annotations: [] },
        { type: "refusal", refusal: "I can't help with that." },
      ],
    };
    const parsed = parse({ input: [{ role: "user", content: "How do I pick a lock?" }, declined] });
    expect(parsed.messages[1]).toStrictEqual({
      role: "assistant",
      content: "Locks are mechanisms. I can't help with that.",
      toolCalls: [],
    });
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

  it("accepts store, background, include, truncation and stream_options at the values the gateway honours", () => {
    const parsed = parse({
      store: false,
      background: false,
      include: [],
      truncation: "disabled",
      service_tier: "auto",
      stream: true,
      stream_options: { include_obfuscation: false },
      previous_response_id: null,
      text: { format: { type: "text" } },
    });
    // The default format, free text, is what every upstream returns unasked: nothing to send.
    expect(parsed).toStrictEqual(parseResponsesRequest({ ...valid, stream: true }));
  });

  it("reads tools, tool choice, parallel calls, format, reasoning effort, metadata and the end user", () => {
    const parameters = { type: "object", properties: { city: { type: "string" } }, required: ["city"] };
    const schema = { type: "object", properties: { answer: { type: "string" } } };
    expect(
      parse({
        tools: [
          { type: "function", name: "get_weather", description: "Weather", parameters, strict: true },
          { type: "function", name: "get_time", parameters: null, strict: null },
        ],
        tool_choice: { type: "function", name: "get_time" },
        parallel_tool_calls: false,
        text: { format: { type: "json_schema", name: "answer", schema, strict: true } },
        reasoning: { effort: "low" },
        metadata: { team: "search" },
        safety_identifier: "user-42",
      }),
    ).toStrictEqual({
      ...parseResponsesRequest(valid),
      tools: [
        { name: "get_weather", description: "Weather", parameters, strict: true },
        { name: "get_time" },
      ],
      toolChoice: { name: "get_time" },
      parallelToolCalls: false,
      outputFormat: { type: "json_schema", name: "answer", schema, strict: true },
      reasoningEffort: "low",
      metadata: { team: "search" },
      user: "user-42",
    });
    expect(parse({ user: "user-7" }).user).toBe("user-7");
    expect(parse({ user: "same", safety_identifier: "same" }).user).toBe("same");
  });

  it("leaves out tool_choice none or auto and parallel_tool_calls when there are no tools, as for chat completions", () => {
    for (const fields of [
      { tool_choice: "none" },
      { tool_choice: "auto", parallel_tool_calls: true },
      { parallel_tool_calls: false },
      { tools: [], tool_choice: "auto" },
    ])
      expect(parse(fields), JSON.stringify(fields)).toStrictEqual(parseResponsesRequest(valid));
  });

  it("joins a turn's function calls to the assistant message before them, and reads their outputs", () => {
    const parsed = parse({
      input: [
        { role: "user", content: "Weather in Seoul and Busan?" },
        {
          type: "message",
          role: "assistant",
          content: [{ type: "output_text", text: "Checking.", annotations: [] }],
        },
        {
          type: "function_call",
          id: "fc_1",
          call_id: "call_a",
          name: "get_weather",
          arguments: '{"city":"Seoul"}',
          status: "completed",
        },
        {
          type: "function_call",
          call_id: "call_b",
          name: "get_weather",
          arguments: '{"city":"Busan"}',
          parsed_arguments: null,
        },
        { type: "function_call_output", call_id: "call_a", output: "12C" },
        { type: "function_call_output", call_id: "call_b", output: [{ type: "input_text", text: "15C" }] },
        { type: "function_call", call_id: "call_c", name: "get_time", arguments: "{}" },
        { type: "function_call_output", call_id: "call_c", output: "noon" },
      ],
    });
    expect(parsed.messages).toStrictEqual([
      { role: "user", content: [{ type: "text", text: "Weather in Seoul and Busan?" }] },
      {
        role: "assistant",
        content: "Checking.",
        toolCalls: [
          { id: "call_a", name: "get_weather", arguments: '{"city":"Seoul"}' },
          { id: "call_b", name: "get_weather", arguments: '{"city":"Busan"}' },
        ],
      },
      { role: "tool", toolCallId: "call_a", content: "12C" },
      { role: "tool", toolCallId: "call_b", content: "15C" },
      { role: "assistant", content: "", toolCalls: [{ id: "call_c", name: "get_time", arguments: "{}" }] },
      { role: "tool", toolCallId: "call_c", content: "noon" },
    ]);
  });

  it("reads input_image parts by https URL or base64 data URL, with their detail", () => {
    const parsed = parse({
      input: [
        {
          role: "user",
          content: [
            { type: "input_text", text: "Compare " },
            { type: "input_text", text: "these." },
            { type: "input_image", image_url: "https://example.com/a.png", detail: "low" },
            { type: "input_image", image_url: "data:image/png;base64,iVBORw0KGgo=" },
          ],
        },
      ],
    });
    expect(parsed.messages).toStrictEqual([
      {
        role: "user",
        content: [
          { type: "text", text: "Compare these." },
          { type: "image", image: { kind: "url", url: "https://example.com/a.png" }, detail: "low" },
          { type: "image", image: { kind: "base64", mediaType: "image/png", data: "iVBORw0KGgo=" } },
        ],
      },
    ]);
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
    [
      "max_output_tokens beyond what a request is priced for",
      { max_output_tokens: Number.MAX_SAFE_INTEGER },
      "max_output_tokens: must be at most 2147483647",
    ],
    ["stream as a number", { stream: 1 }, "stream: must be a boolean"],
    ["instructions as a number", { instructions: 5 }, "instructions: must be a string"],
    ["model missing", { model: undefined }, "model: is required"],
    ["model empty", { model: "" }, "model: must not be empty"],
    ["input missing", { input: undefined }, "input: is required"],
    ["input as a number", { input: 5 }, "input: must be a string or an array of items"],
    ["input empty", { input: [] }, "input: must not be empty: give a non-empty string or at least one item"],
    [
      "input an empty string",
      { input: "" },
      "input: must not be empty: give a non-empty string or at least one item",
    ],
    [
      "an output answering no earlier call",
      { input: [{ type: "function_call_output", call_id: "c", output: "42" }] },
      "input.0.call_id: answers no function_call earlier in input",
    ],
    [
      "a reasoning item",
      { input: [{ type: "reasoning", id: "rs_1", summary: [] }] },
      "input.0.type: reasoning items are not accepted: the gateway returns none and stores nothing to resolve them",
    ],
    [
      "an item of another type",
      { input: [{ type: "web_search_call", id: "ws_1" }] },
      'input.0.type: must be "message", "function_call", "function_call_output": other items are not supported',
    ],
    [
      "an item with a tool role",
      { input: [{ role: "tool", content: "42" }] },
      'input.0.role: must be one of "system", "developer", "user", "assistant"',
    ],
    [
      "a file part",
      { input: [{ role: "user", content: [{ type: "input_file", file_id: "file_1" }] }] },
      'input.0.content.0.type: must be "input_text", "output_text", "text", "input_image", "refusal"',
    ],
    [
      "a refusal part in a user message",
      { input: [{ role: "user", content: [{ type: "refusal", refusal: "No." }] }] },
      "input.0.content.0.type: refusal is supported only in assistant messages",
    ],
    [
      "a refusal part without its words",
      { input: [{ type: "message", role: "assistant", content: [{ type: "refusal" }] }] },
      "input.0.content.0.refusal: must be a string",
    ],
    [
      "an image by file_id",
      { input: [{ role: "user", content: [{ type: "input_image", file_id: "file_1", detail: "auto" }] }] },
      "input.0.content.0.file_id: not supported: the gateway stores no files; send the image as image_url",
    ],
    [
      "an image by plain http",
      {
        input: [{ role: "user", content: [{ type: "input_image", image_url: "http://example.com/a.png" }] }],
      },
      "input.0.content.0.image_url: must be an https URL or a base64 data URL",
    ],
    [
      "an image in a system message",
      {
        input: [
          { role: "system", content: [{ type: "input_image", image_url: "https://example.com/a.png" }] },
        ],
      },
      "input.0.content.0.type: input_image is supported only in user messages",
    ],
    [
      "an item without content",
      { input: [{ role: "user" }] },
      "input.0.content: must be a string or an array of content parts",
    ],
    [
      "a hosted tool",
      { tools: [{ type: "function", name: "f" }, { type: "web_search" }] },
      'tools.1.type: must be "function": web_search tools are not supported, only function tools',
    ],
    [
      "a function tool field the gateway does not serve",
      { tools: [{ type: "function", name: "f", defer_loading: true }] },
      "tools.0.defer_loading: is not a field the gateway serves",
    ],
    [
      "a tool named twice",
      {
        tools: [
          { type: "function", name: "f" },
          { type: "function", name: "f" },
        ],
      },
      'tools.1.name: "f" is defined twice',
    ],
    [
      "a tool choice of another kind",
      { tools: [{ type: "function", name: "f" }], tool_choice: { type: "web_search_preview" } },
      'tool_choice: must be "auto", "none", "required" or { type: "function", name }',
    ],
    [
      "a named tool choice without that tool",
      { tools: [{ type: "function", name: "f" }], tool_choice: { type: "function", name: "g" } },
      'tool_choice.name: no function named "g" in tools',
    ],
    [
      "a required tool choice without tools",
      { tool_choice: "required" },
      'tool_choice: "required" needs at least one tool',
    ],
    [
      "a json_schema format without a schema",
      { text: { format: { type: "json_schema", name: "answer" } } },
      "text.format.schema: must be a JSON Schema object",
    ],
    [
      "text.verbosity",
      { text: { verbosity: "low" } },
      "text.verbosity: not supported: the gateway carries no verbosity setting to any upstream",
    ],
    [
      "an unknown reasoning effort",
      { reasoning: { effort: "max" } },
      'reasoning.effort: must be one of "none", "minimal", "low", "medium", "high", "xhigh"',
    ],
    [
      "reasoning.summary",
      { reasoning: { summary: "auto" } },
      "reasoning.summary: not supported: the gateway returns no reasoning items to summarise",
    ],
    [
      "metadata with 17 keys",
      { metadata: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, "v"])) },
      "metadata: must have at most 16 keys",
    ],
    [
      "a metadata value of 513 characters",
      { metadata: { k: "v".repeat(513) } },
      "metadata.k: must be at most 512 characters",
    ],
    [
      "user and safety_identifier that differ",
      { user: "a", safety_identifier: "b" },
      "user: conflicts with safety_identifier; send only one of them",
    ],
    ["store: true", { store: true }, "store: must be false or absent: the gateway stores no responses"],
    [
      "background: true",
      { background: true },
      "background: must be false or absent: the gateway runs no background responses",
    ],
    [
      "a non-empty include",
      { include: ["reasoning.encrypted_content"] },
      "include: must be empty: the gateway returns no additional output data",
    ],
    [
      "previous_response_id",
      { previous_response_id: "resp_1" },
      "previous_response_id: not supported: the gateway stores no responses; send the whole conversation as input",
    ],
    [
      "conversation",
      { conversation: "conv_1" },
      "conversation: not supported: the gateway stores no responses; send the whole conversation as input",
    ],
    ["prompt", { prompt: { id: "pmpt_1" } }, "prompt: not supported: the gateway stores no prompt templates"],
    [
      "top_logprobs",
      { top_logprobs: 2 },
      "top_logprobs: not supported: the gateway returns no log probabilities",
    ],
    [
      "truncation auto",
      { truncation: "auto" },
      'truncation: must be "disabled" or absent: the gateway never truncates the conversation',
    ],
    [
      "a priority service tier",
      { service_tier: "priority" },
      'service_tier: must be "auto" or absent: the gateway chooses no service tier',
    ],
    [
      "prompt_cache_key",
      { prompt_cache_key: "k" },
      "prompt_cache_key: not supported: the gateway carries no cache key upstream",
    ],
    [
      "a parameter of another format",
      { max_tokens: 10 },
      "max_tokens: is not a parameter of the responses format",
    ],
    [
      "stream options without a stream",
      { stream_options: { include_obfuscation: false } },
      "stream_options: only allowed when stream is true",
    ],
    [
      "stream options with stream false",
      { stream: false, stream_options: {} },
      "stream_options: only allowed when stream is true",
    ],
  ])("%s", (_case, fields, message) => {
    expectValidationError(() => parse(fields), message);
  });

  it.each([null, ["Why?"], "Why?"])("a body that is not an object: %j", (body) => {
    expectValidationError(() => parseResponsesRequest(body), "request body must be a JSON object");
  });
});
