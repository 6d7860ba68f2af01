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

  it("accepts the values that ask for nothing beyond the default", () => {
    const parsed = parse({
      n: 1,
      logprobs: false,
      logit_bias: {},
      store: false,
      modalities: ["text"],
      service_tier: "auto",
    });
    expect(parsed).toStrictEqual(parseChatCompletionsRequest(valid));
  });

  it("keeps a message's participant name, for the upstreams whose protocol carries it", () => {
    const parsed = parse({
      messages: [
        { role: "system", content: "Moderate.", name: "moderator" },
        { role: "user", content: "Hi", name: "ana" },
        { role: "assistant", content: "Hello", name: "bot", refusal: null },
        { role: "user", content: "Bye", name: null },
      ],
    });
    expect(parsed.messages).toStrictEqual([
      { role: "system", content: "Moderate.", name: "moderator" },
      { role: "user", content: [{ type: "text", text: "Hi" }], name: "ana" },
      { role: "assistant", content: "Hello", toolCalls: [], name: "bot" },
      { role: "user", content: [{ type: "text", text: "Bye" }] },
    ]);
  });

  it("accepts a reply's message sent back as history, with the fields the protocol and its clients add", () => {
    const echoed = {
      role: "assistant",
      content: "Erosion.",
      refusal: null,
      annotations: [],
      audio: null,
      function_call: null,
      parsed: null,
    };
    expect(
      parse({ messages: [valid.messages[0], echoed, { role: "user", content: "More?" }] }).messages,
    ).toEqual([
      { role: "user", content: [{ type: "text", text: "Why do rivers bend?" }] },
      { role: "assistant", content: "Erosion.", toolCalls: [] },
      { role: "user", content: [{ type: "text", text: "More?" }] },
    ]);
  });

  it("reads a declined turn sent back as history as the assistant's words: its refusal, or its refusal parts", () => {
    const question = { role: "user", content: "How do I pick a lock?" };
    const next = { role: "user", content: "Why not?" };
    const declined = [
      { role: "assistant", content: null, refusal: "I can't help with that." },
      {
        role: "assistant",
        content: [
          { type: "text", text: "Locks are mechanisms. " },
          { type: "refusal", refusal: "I can't help with that." },
        ],
      },
      { role: "assistant", content: "Locks are mechanisms. ", refusal: "I can't help with that." },
    ];
    expect(
      declined.map((message) => parse({ messages: [question, message, next] }).messages[1]),
    ).toStrictEqual([
      { role: "assistant", content: "I can't help with that.", toolCalls: [] },
      { role: "assistant", content: "Locks are mechanisms. I can't help with that.", toolCalls: [] },
      { role: "assistant", content: "Locks are mechanisms. I can't help with that.", toolCalls: [] },
    ]);
  });

  it("accepts stream_options with a stream and acts on none of it: usage always ends a stream", () => {
    expect(
      parse({ stream: true, stream_options: { include_usage: false, include_obfuscation: false } }),
    ).toStrictEqual({ ...parseChatCompletionsRequest(valid), stream: true });
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
    ["max_tokens", 2_147_483_647],
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
      "max_tokens beyond what a request is priced for",
      { max_tokens: 2_147_483_648 },
      "max_tokens: must be at most 2147483647",
    ],
    ["max_tokens beyond exact numbers", { max_tokens: 2 ** 53 }, "max_tokens: must be at most 2147483647"],
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
      "a tool message without tool_call_id",
      { messages: [{ role: "tool", content: "42" }] },
      "messages.0.tool_call_id: must be a string",
    ],
    [
      "a message without role",
      { messages: [{ content: "hi" }] },
      'messages.0.role: must be one of "system", "developer", "user", "assistant", "tool"',
    ],
    [
      "a message of the deprecated function role",
      { messages: [{ role: "function", name: "f", content: "42" }] },
      'messages.0.role: must be one of "system", "developer", "user", "assistant", "tool"',
    ],
    [
      "a message without content",
      { messages: [{ role: "user" }] },
      "messages.0.content: must be a string or an array of text and image_url parts",
    ],
    [
      "null content without tool calls or a refusal",
      { messages: [{ role: "assistant", content: null, refusal: null }] },
      "messages.0.content: must be a string or an array of text parts unless the message has tool_calls or a refusal",
    ],
    [
      "a refusal that is no string",
      { messages: [{ role: "assistant", content: null, refusal: 5 }] },
      "messages.0.refusal: must be a string",
    ],
    [
      "a refusal part in a user message",
      { messages: [{ role: "user", content: [{ type: "refusal", refusal: "No." }] }] },
      'messages.0.content.0.type: must be "text" or "image_url": only text and image content is supported',
    ],
    [
      "an image part in an assistant message",
      {
        messages: [
          {
            role: "assistant",
            content: [{ type: "image_url", image_url: { url: "https://a.example/b.png" } }],
          },
        ],
      },
      'messages.0.content.0.type: must be "text" or "refusal": only text content is supported',
    ],
    [
      "an image part in a system message",
      {
        messages: [
          { role: "system", content: [{ type: "image_url", image_url: { url: "https://a.example/b.png" } }] },
        ],
      },
      'messages.0.content.0.type: must be "text": only text content is supported',
    ],
    [
      "an audio part",
      {
        messages: [
          { role: "user", content: [{ type: "input_audio", input_audio: { data: "", format: "wav" } }] },
        ],
      },
      'messages.0.content.0.type: must be "text" or "image_url": only text and image content is supported',
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

const weather = {
  type: "function",
  function: {
    name: "get_weather",
    description: "The weather in a city",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
    strict: true,
  },
};
const weatherCall = {
  id: "call_1",
  type: "function",
  function: { name: "get_weather", arguments: '{"city":"Seoul"}' },
};

describe("parseChatCompletionsRequest: tools and tool turns", () => {
  it.each([
    [
      { messages: [{ role: "user", content: "Hi", speaker: "ana" }] },
      "messages.0.speaker: is not a field of a message the gateway serves",
    ],
    [
      { messages: [{ role: "tool", tool_call_id: "c", content: "1", name: "f" }] },
      "messages.0.name: is not a field of a message the gateway serves",
    ],
    [{ messages: [{ role: "user", content: "Hi", name: "" }] }, "messages.0.name: must not be empty"],
    [
      { tools: [{ type: "function", function: { name: "get_weather", paramters: { type: "object" } } }] },
      "tools.0.function.paramters: is not a field of a function tool",
    ],
    [
      { tools: [{ ...weather, cache_control: { type: "ephemeral" } }] },
      "tools.0.cache_control: is not a field of a function tool",
    ],
    [
      { stream: true, stream_options: { include_usage: true, verbose: true } },
      "stream_options.verbose: is not a field the gateway serves",
    ],
    [
      { stream: true, stream_options: { include_obfuscation: true } },
      "stream_options.include_obfuscation: must be false or absent: the gateway adds no obfuscation to stream events",
    ],
    [{ stream_options: { include_usage: true } }, "stream_options: only allowed when stream is true"],
    [{ stream: false, stream_options: {} }, "stream_options: only allowed when stream is true"],
    // Misspelt, a field inside tool_choice or response_format would be dropped and the client believe it
    // honoured (strict mode off without a word): refused, as the responses format refuses it (C12).
    [
      { tools: [weather], tool_choice: { type: "function", function: { name: "get_weather" }, extra: 1 } },
      "tool_choice.extra: is not a field the gateway serves",
    ],
    [
      {
        tools: [weather],
        tool_choice: { type: "function", function: { name: "get_weather", strict: true } },
      },
      "tool_choice.function.strict: is not a field the gateway serves",
    ],
    [{ response_format: { type: "text", foo: 1 } }, "response_format.foo: is not a field the gateway serves"],
    [
      { response_format: { type: "json_object", schema: {} } },
      "response_format.schema: is not a field the gateway serves",
    ],
    [
      {
        response_format: {
          type: "json_schema",
          json_schema: { name: "answer", schema: { type: "object" }, strcit: true },
        },
      },
      "response_format.json_schema.strcit: is not a field the gateway serves",
    ],
    [
      {
        response_format: {
          type: "json_schema",
          json_schema: { name: "answer", schema: { type: "object" } },
          strict: true,
        },
      },
      "response_format.strict: is not a field the gateway serves",
    ],
  ])("refuses %j: %s", (fields, message) => {
    expectValidationError(() => parse(fields), message);
  });

  it("reads tools, tool_choice and parallel_tool_calls into the internal forms", () => {
    const parsed = parse({
      tools: [weather, { type: "function", function: { name: "get-time_2" } }],
      tool_choice: { type: "function", function: { name: "get_weather" } },
      parallel_tool_calls: false,
    });
    expect(parsed.tools).toStrictEqual([
      {
        name: "get_weather",
        description: "The weather in a city",
        parameters: weather.function.parameters,
        strict: true,
      },
      { name: "get-time_2" },
    ]);
    expect(parsed.toolChoice).toStrictEqual({ name: "get_weather" });
    expect(parsed.parallelToolCalls).toBe(false);
  });

  it.each(["none", "auto", "required"])("reads tool_choice %s", (choice) => {
    expect(parse({ tools: [weather], tool_choice: choice }).toolChoice).toBe(choice);
  });

  it("leaves out tool_choice none or auto and parallel_tool_calls when there are no tools: they ask for nothing", () => {
    for (const fields of [
      { tool_choice: "none" },
      { tool_choice: "auto", parallel_tool_calls: true },
      { tools: [] },
    ])
      expect(parse(fields)).toStrictEqual(parseChatCompletionsRequest(valid));
  });

  it("reads an assistant turn of tool calls with null content, and the tool results answering it", () => {
    const parsed = parse({
      messages: [
        { role: "user", content: "Weather in Seoul?" },
        { role: "assistant", content: null, tool_calls: [weatherCall] },
        {
          role: "tool",
          tool_call_id: "call_1",
          content: [
            { type: "text", text: '{"celsius":' },
            { type: "text", text: "21}" },
          ],
        },
      ],
    });
    expect(parsed.messages).toStrictEqual([
      { role: "user", content: [{ type: "text", text: "Weather in Seoul?" }] },
      {
        role: "assistant",
        content: "",
        toolCalls: [{ id: "call_1", name: "get_weather", arguments: '{"city":"Seoul"}' }],
      },
      { role: "tool", toolCallId: "call_1", content: '{"celsius":21}' },
    ]);
  });

  const longName = "a".repeat(65);
  it.each<[string, Record<string, unknown>, string]>([
    ["tools not an array", { tools: {} }, "tools: must be an array of tools"],
    [
      "a custom tool",
      { tools: [{ type: "custom", custom: { name: "x" } }] },
      'tools.0.type: must be "function": only function tools are supported',
    ],
    [
      "a function name with a space",
      { tools: [{ type: "function", function: { name: "get weather" } }] },
      "tools.0.function.name: must be 1 to 64 letters, digits, underscores or dashes",
    ],
    [
      "a function name of 65 characters",
      { tools: [{ type: "function", function: { name: longName } }] },
      "tools.0.function.name: must be 1 to 64 letters, digits, underscores or dashes",
    ],
    [
      "parameters that are not an object",
      { tools: [{ type: "function", function: { name: "f", parameters: [] } }] },
      "tools.0.function.parameters: must be a JSON Schema object",
    ],
    [
      "strict not a boolean",
      { tools: [{ type: "function", function: { name: "f", strict: "yes" } }] },
      "tools.0.function.strict: must be a boolean",
    ],
    [
      "two tools of one name",
      { tools: [weather, weather] },
      "tools.1.function.name: is already a tool's name",
    ],
    [
      "more than 128 tools",
      {
        tools: Array.from({ length: 129 }, (_, index) => ({
          type: "function",
          function: { name: `f${index}` },
        })),
      },
      "tools: must have at most 128 tools",
    ],
    [
      "an unknown tool_choice",
      { tools: [weather], tool_choice: "any" },
      'tool_choice: must be "none", "auto", "required" or {"type": "function", "function": {"name": …}}',
    ],
    [
      "a tool_choice naming no tool",
      { tools: [weather], tool_choice: { type: "function", function: { name: "get_time" } } },
      "tool_choice.function.name: must be one of the tools' names",
    ],
    [
      "tool_choice required without tools",
      { tool_choice: "required" },
      "tool_choice: asks for a tool call, but the request has no tools",
    ],
    [
      "parallel_tool_calls as a string",
      { parallel_tool_calls: "no" },
      "parallel_tool_calls: must be a boolean",
    ],
    [
      "a tool call of another type",
      { messages: [{ role: "assistant", content: null, tool_calls: [{ ...weatherCall, type: "custom" }] }] },
      'messages.0.tool_calls.0.type: must be "function": only function tool calls are supported',
    ],
    [
      "tool call arguments as an object",
      {
        messages: [
          {
            role: "assistant",
            tool_calls: [{ ...weatherCall, function: { name: "get_weather", arguments: {} } }],
          },
        ],
      },
      "messages.0.tool_calls.0.function.arguments: must be a string",
    ],
    [
      "a tool result answering no call",
      {
        messages: [
          { role: "user", content: "Hi" },
          { role: "tool", tool_call_id: "call_9", content: "42" },
        ],
      },
      "messages.1.tool_call_id: must answer a tool call of the assistant message just before the tool messages",
    ],
    [
      "a tool call left unanswered",
      {
        messages: [
          { role: "user", content: "Hi" },
          { role: "assistant", content: null, tool_calls: [weatherCall] },
          { role: "user", content: "Well?" },
        ],
      },
      'messages.1.tool_calls: tool call "call_1" has no tool message answering it',
    ],
    [
      "the deprecated functions",
      { functions: [{ name: "f" }] },
      "functions: not supported: deprecated; send tools",
    ],
    [
      "the deprecated function_call",
      { function_call: "auto" },
      "function_call: not supported: deprecated; send tool_choice",
    ],
  ])("%s is refused naming the field", (_case, fields, message) => {
    expectValidationError(() => parse(fields), message);
  });
});

describe("parseChatCompletionsRequest: image_url parts", () => {
  const imagePart = (url: string, detail?: string) => ({ type: "image_url", image_url: { url, detail } });
  const withImage = (part: unknown) =>
    parse({ messages: [{ role: "user", content: [{ type: "text", text: "What is it?" }, part] }] });

  it("reads a data URL as base64 with its media type, and an https URL as a URL, keeping detail", () => {
    expect(withImage(imagePart("data:image/png;base64,iVBORw0KGgo=", "low")).messages[0]).toStrictEqual({
      role: "user",
      content: [
        { type: "text", text: "What is it?" },
        {
          type: "image",
          image: { kind: "base64", mediaType: "image/png", data: "iVBORw0KGgo=" },
          detail: "low",
        },
      ],
    });
    expect(withImage(imagePart("https://images.example/harbor.jpg")).messages[0]).toStrictEqual({
      role: "user",
      content: [
        { type: "text", text: "What is it?" },
        { type: "image", image: { kind: "url", url: "https://images.example/harbor.jpg" } },
      ],
    });
  });

  it.each<[string, unknown, string]>([
    ["an http URL", imagePart("http://images.example/a.png"), "must be an https URL or a base64 data URL"],
    ["a file URL", imagePart("file:///etc/passwd"), "must be an https URL or a base64 data URL"],
    ["not a URL", imagePart("harbor.png"), "must be an https URL or a base64 data URL"],
    [
      "a data URL of text",
      imagePart("data:text/plain;base64,aGk="),
      "media type must be one of image/png, image/jpeg, image/gif, image/webp",
    ],
    [
      "a data URL without base64",
      imagePart("data:image/png,rawbytes"),
      "must be a base64 data URL (data:<media type>;base64,<data>)",
    ],
    ["broken base64", imagePart("data:image/png;base64,iVBOR*0KGgo="), "data must be padded standard base64"],
    [
      "unpadded base64",
      imagePart("data:image/png;base64,iVBORw0KGgo"),
      "data must be padded standard base64",
    ],
    ["empty base64", imagePart("data:image/jpeg;base64,"), "data must be padded standard base64"],
  ])("%s is refused naming the url", (_case, part, message) => {
    expectValidationError(() => withImage(part), `messages.0.content.1.image_url.url: ${message}`);
  });

  it("refuses an unknown detail", () => {
    expectValidationError(
      () => withImage(imagePart("https://images.example/a.png", "ultra")),
      'messages.0.content.1.image_url.detail: must be "auto", "low" or "high"',
    );
  });
});

describe("parseChatCompletionsRequest: response_format and the sampling parameters", () => {
  const schema = { type: "object", properties: { answer: { type: "string" } }, required: ["answer"] };

  it.each<[unknown, unknown]>([
    [{ type: "text" }, { type: "text" }],
    [{ type: "json_object" }, { type: "json_object" }],
    [
      {
        type: "json_schema",
        json_schema: { name: "answer", schema, strict: true, description: "One answer" },
      },
      { type: "json_schema", name: "answer", schema, strict: true, description: "One answer" },
    ],
  ])("reads response_format %j", (format, outputFormat) => {
    expect(parse({ response_format: format }).outputFormat).toStrictEqual(outputFormat);
  });

  it("reads stop, seed, penalties, reasoning_effort, user and metadata", () => {
    const parsed = parse({
      stop: "\n\n",
      seed: -42,
      presence_penalty: -2,
      frequency_penalty: 2,
      reasoning_effort: "low",
      user: "user-17",
      metadata: { team: "search", ["k".repeat(64)]: "v".repeat(512) },
    });
    expect(parsed).toMatchObject({
      stop: ["\n\n"],
      seed: -42,
      presencePenalty: -2,
      frequencyPenalty: 2,
      reasoningEffort: "low",
      user: "user-17",
      metadata: { team: "search", ["k".repeat(64)]: "v".repeat(512) },
    });
    expect(parse({ stop: ["a", "b", "c", "d"] }).stop).toStrictEqual(["a", "b", "c", "d"]);
  });

  it("reads safety_identifier as the end user, as user is read; the same value under both is one", () => {
    expect(parse({ safety_identifier: "user-42" }).user).toBe("user-42");
    expect(parse({ user: "same", safety_identifier: "same" }).user).toBe("same");
    expectValidationError(
      () => parse({ user: "a", safety_identifier: "b" }),
      "user: conflicts with safety_identifier; send only one of them",
    );
  });

  const manyKeys = Object.fromEntries(Array.from({ length: 17 }, (_, index) => [`k${index}`, "v"]));
  it.each<[string, Record<string, unknown>, string]>([
    [
      "an unknown response_format",
      { response_format: { type: "xml" } },
      'response_format.type: must be "text", "json_object" or "json_schema"',
    ],
    [
      "a response_format string",
      { response_format: "json" },
      'response_format: must be {"type": "text"}, {"type": "json_object"} or {"type": "json_schema", "json_schema": {…}}',
    ],
    [
      "a json_schema without schema",
      { response_format: { type: "json_schema", json_schema: { name: "a" } } },
      "response_format.json_schema.schema: must be a JSON Schema object",
    ],
    [
      "a json_schema with a bad name",
      { response_format: { type: "json_schema", json_schema: { name: "a b", schema } } },
      "response_format.json_schema.name: must be 1 to 64 letters, digits, underscores or dashes",
    ],
    ["five stop sequences", { stop: ["a", "b", "c", "d", "e"] }, "stop: must have at most 4 sequences"],
    ["an empty stop list", { stop: [] }, "stop: must be a string or an array of 1 to 4 strings"],
    ["a stop number", { stop: 5 }, "stop: must be a string or an array of 1 to 4 strings"],
    [
      "a fractional seed",
      { seed: 1.5 },
      "seed: must be an integer from -9007199254740991 to 9007199254740991",
    ],
    [
      "a presence_penalty below -2",
      { presence_penalty: -2.1 },
      "presence_penalty: must be a number from -2 to 2 inclusive",
    ],
    [
      "a frequency_penalty above 2",
      { frequency_penalty: 2.5 },
      "frequency_penalty: must be a number from -2 to 2 inclusive",
    ],
    [
      "an unknown reasoning_effort",
      { reasoning_effort: "max" },
      'reasoning_effort: must be one of "none", "minimal", "low", "medium", "high", "xhigh"',
    ],
    ["a user of 257 characters", { user: "u".repeat(257) }, "user: must be at most 256 characters"],
    ["metadata with 17 keys", { metadata: manyKeys }, "metadata: must have at most 16 keys"],
    [
      "a metadata key of 65 characters",
      { metadata: { ["k".repeat(65)]: "v" } },
      `metadata.${"k".repeat(65)}: key must be at most 64 characters`,
    ],
    [
      "a metadata value of 513 characters",
      { metadata: { k: "v".repeat(513) } },
      "metadata.k: must be at most 512 characters",
    ],
    ["a metadata number", { metadata: { k: 5 } }, "metadata.k: must be a string"],
  ])("%s is refused naming the field", (_case, fields, message) => {
    expectValidationError(() => parse(fields), message);
  });
});

describe("parseChatCompletionsRequest: what the gateway cannot honour is refused by name (C12)", () => {
  it.each<[string, Record<string, unknown>, string]>([
    ["n: 2", { n: 2 }, "n: must be 1: the gateway returns one choice"],
    ["logprobs: true", { logprobs: true }, "logprobs: not supported: log probabilities are not returned"],
    ["top_logprobs", { top_logprobs: 3 }, "top_logprobs: not supported: log probabilities are not returned"],
    [
      "audio",
      { audio: { voice: "alloy", format: "mp3" } },
      "audio: not supported: audio output is not served",
    ],
    [
      "audio modalities",
      { modalities: ["text", "audio"] },
      'modalities.1: must be "text": audio output is not served',
    ],
    [
      "prediction",
      { prediction: { type: "content", content: "x" } },
      "prediction: not supported: predicted outputs are not served",
    ],
    [
      "a logit_bias",
      { logit_bias: { "50256": -100 } },
      "logit_bias: not supported: token biases cannot be carried to every upstream",
    ],
    [
      "web_search_options",
      { web_search_options: {} },
      "web_search_options: not supported: web search is not served",
    ],
    ["store: true", { store: true }, "store: not supported: the gateway does not store completions"],
    ["a field the protocol does not have", { temperature_boost: 1 }, "temperature_boost: not supported"],
    [
      "a named service_tier",
      { service_tier: "flex" },
      'service_tier: must be "auto" or absent: the gateway chooses no service tier',
    ],
  ])("%s", (_case, fields, message) => {
    expectValidationError(() => parse(fields), message);
  });
});
