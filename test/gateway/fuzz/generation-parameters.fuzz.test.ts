import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GatewayHarness, startGatewayHarness } from "../../support/gateway-harness";
import {
  type Answer,
  answerOf,
  bodyWith,
  expectErrorBody,
  fuzzSettings,
  type Hostile,
  hostileValue,
  isLedgerUnavailable,
  megabyteCharacters,
} from "./support/hostile-values";

/**
 * POST /llm/v1/chat/completions and /llm/v1/responses over combinations of every parameter either format
 * defines — valid values, invalid values, nulls, random extra fields, and a hostile value (NUL, lone
 * surrogates, 1 MB, 10,000 levels of nesting) in one of them — against every upstream protocol: never a 5xx;
 * a 4xx is the error body; a 200 is the format's reply, or a stream that ends with `data: [DONE]`.
 */

/** One model per upstream protocol and ignored-parameter rule. */
const models = [
  "alpha-5.4-mini",
  "alpha-5.4-pro",
  "alpha-5.5",
  "beta-3-flash",
  "gamma-4-3",
  "delta-4.5-haiku",
  "delta-4.7-opus",
  "zeta-mini",
];

const anyJson = fc.jsonValue({ maxDepth: 2 });
const text = fc.string({ maxLength: 30 });
const invalid = fc.oneof(anyJson, fc.constantFrom(-1, 1.5, "", "x", [], {}, true));
/** Mostly within [min, max] (in hundredths), sometimes just outside it. */
const number = (min: number, max: number) =>
  fc.oneof(
    {
      arbitrary: fc.integer({ min: Math.round(min * 100), max: Math.round(max * 100) }).map((n) => n / 100),
      weight: 8,
    },
    { arbitrary: fc.constantFrom(min - 0.01, max + 0.01, min - 1e6, max + 1e6), weight: 1 },
  );
const tokens = fc.oneof(
  fc.integer({ min: -2, max: 64 }),
  fc.integer({ min: 2 ** 39, max: Number.MAX_SAFE_INTEGER }),
  fc.constant(2 ** 60),
  fc.constant(0.5),
);
const pngDataUrl =
  "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
const functionName = fc.constantFrom("get_weather", "lookup", "bad name!", "");
const jsonSchema = fc.constantFrom<unknown>(
  { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  { type: "object" },
  { type: "string" },
  "not a schema",
);
const metadata = fc.oneof(fc.dictionary(text, text, { maxKeys: 3 }), invalid);
const extraFields = fc.dictionary(
  fc.oneof(fc.constantFrom("n", "logprobs", "store", "service_tier", "prediction", "audio"), text),
  anyJson,
  { maxKeys: 3 },
);

/** Mostly valid, so that combinations reach the upstream; sometimes invalid, sometimes an explicit null. */
const maybe = <T>(arbitrary: fc.Arbitrary<T>) =>
  fc.oneof(
    { arbitrary, weight: 12 },
    { arbitrary: invalid, weight: 1 },
    { arbitrary: fc.constant(null), weight: 1 },
  );
const model = fc.oneof(
  { arbitrary: fc.constantFrom(...models), weight: 12 },
  { arbitrary: fc.constant("omega-1"), weight: 1 },
  { arbitrary: invalid, weight: 1 },
);

const chatContent = fc.oneof(
  { arbitrary: text, weight: 6 },
  fc.array(
    fc.oneof(
      fc.record({ type: fc.constant("text"), text }),
      fc.record({ type: fc.constant("image_url"), image_url: fc.record({ url: fc.constant(pngDataUrl) }) }),
      fc.record({ type: fc.constantFrom("input_audio", "file", "refusal"), text }),
    ),
    { maxLength: 3 },
  ),
  invalid,
);
const chatRole = fc.oneof(
  { arbitrary: fc.constant("user"), weight: 6 },
  { arbitrary: fc.constantFrom("system", "developer", "assistant", "tool", "function", "robot"), weight: 4 },
);
const chatToolCall = fc.record({
  id: fc.constantFrom("call_1", "call_2"),
  type: fc.constantFrom("function", "custom"),
  function: fc.record({ name: functionName, arguments: fc.constantFrom('{"city":"Seoul"}', "{", "") }),
});
const chatMessage = fc.record(
  {
    role: chatRole,
    content: chatContent,
    name: text,
    tool_calls: fc.oneof(fc.array(chatToolCall, { maxLength: 2 }), invalid),
    tool_call_id: fc.constantFrom("call_1", "call_2", "unknown"),
  },
  { requiredKeys: ["role"] },
);
const chatTool = fc.oneof(
  fc.record({
    type: fc.constant("function"),
    function: fc.record(
      { name: functionName, description: text, parameters: jsonSchema, strict: fc.boolean() },
      { requiredKeys: ["name"] },
    ),
  }),
  fc.record({ type: fc.constantFrom("web_search", "custom") }),
);
const chatMessages = fc.oneof(
  { arbitrary: fc.array(chatMessage, { minLength: 1, maxLength: 4 }), weight: 8 },
  { arbitrary: invalid, weight: 1 },
);
const chatBody = fc.record(
  {
    model,
    messages: chatMessages,
    stream: maybe(fc.boolean()),
    stream_options: maybe(fc.record({ include_usage: fc.boolean() }, { requiredKeys: [] })),
    temperature: maybe(number(0, 2)),
    top_p: maybe(number(0, 1)),
    max_tokens: maybe(tokens),
    max_completion_tokens: maybe(tokens),
    stop: maybe(fc.oneof(text, fc.array(text, { maxLength: 5 }))),
    seed: maybe(fc.integer()),
    presence_penalty: maybe(number(-2, 2)),
    frequency_penalty: maybe(number(-2, 2)),
    reasoning_effort: maybe(fc.constantFrom("minimal", "low", "medium", "high", "none", "extreme")),
    user: maybe(text),
    metadata,
    tools: maybe(fc.array(chatTool, { maxLength: 3 })),
    tool_choice: maybe(
      fc.oneof(
        fc.constantFrom("auto", "none", "required", "sometimes"),
        fc.record({ type: fc.constant("function"), function: fc.record({ name: functionName }) }),
      ),
    ),
    parallel_tool_calls: maybe(fc.boolean()),
    response_format: maybe(
      fc.oneof(
        fc.record({ type: fc.constantFrom("text", "json_object", "xml") }),
        fc.record({
          type: fc.constant("json_schema"),
          json_schema: fc.record({
            name: fc.constantFrom("answer", ""),
            schema: jsonSchema,
            strict: fc.boolean(),
          }),
        }),
      ),
    ),
  },
  { requiredKeys: ["model", "messages"] },
);

const inputPart = fc.oneof(
  fc.record({ type: fc.constantFrom("input_text", "output_text", "text"), text }),
  fc.record({ type: fc.constant("input_image"), image_url: fc.constant(pngDataUrl) }),
  fc.record({ type: fc.constantFrom("input_file", "input_audio"), text }),
);
const responsesItem = fc.oneof(
  { arbitrary: fc.record({ role: fc.constant("user"), content: text }), weight: 6 },
  fc.record(
    {
      type: fc.constant("message"),
      role: fc.constantFrom("system", "developer", "user", "assistant", "robot"),
      content: fc.oneof(text, fc.array(inputPart, { maxLength: 3 }), invalid),
    },
    { requiredKeys: ["role", "content"] },
  ),
  fc.record({
    type: fc.constant("function_call"),
    call_id: fc.constantFrom("call_1", "call_2"),
    name: functionName,
    arguments: fc.constantFrom('{"city":"Seoul"}', "{"),
  }),
  fc.record({
    type: fc.constant("function_call_output"),
    call_id: fc.constantFrom("call_1", "unknown"),
    output: fc.oneof(text, invalid),
  }),
  fc.record({ type: fc.constantFrom("reasoning", "web_search_call", "item_reference"), id: text }),
);
const responsesTool = fc.oneof(
  fc.record(
    {
      type: fc.constant("function"),
      name: functionName,
      description: text,
      parameters: jsonSchema,
      strict: fc.boolean(),
    },
    { requiredKeys: ["type", "name"] },
  ),
  fc.record({ type: fc.constantFrom("web_search", "file_search", "computer_use_preview") }),
);
const responsesBody = fc.record(
  {
    model,
    input: fc.oneof(
      { arbitrary: text, weight: 3 },
      { arbitrary: fc.array(responsesItem, { minLength: 1, maxLength: 4 }), weight: 4 },
      { arbitrary: invalid, weight: 1 },
    ),
    instructions: maybe(text),
    stream: maybe(fc.boolean()),
    temperature: maybe(number(0, 2)),
    top_p: maybe(number(0, 1)),
    max_output_tokens: maybe(tokens),
    reasoning: maybe(
      fc.record(
        {
          effort: fc.constantFrom("minimal", "low", "medium", "high", "extreme"),
          summary: fc.constant("auto"),
        },
        { requiredKeys: [] },
      ),
    ),
    user: maybe(text),
    metadata,
    tools: maybe(fc.array(responsesTool, { maxLength: 3 })),
    tool_choice: maybe(
      fc.oneof(
        fc.constantFrom("auto", "none", "required", "sometimes"),
        fc.record({ type: fc.constant("function"), name: functionName }),
      ),
    ),
    parallel_tool_calls: maybe(fc.boolean()),
    text: maybe(
      fc.record({
        format: fc.oneof(
          fc.record({ type: fc.constantFrom("text", "json_object", "xml") }),
          fc.record({
            type: fc.constant("json_schema"),
            name: fc.constantFrom("answer", ""),
            schema: jsonSchema,
          }),
        ),
      }),
    ),
    previous_response_id: maybe(text),
    truncation: maybe(fc.constantFrom("auto", "disabled")),
  },
  { requiredKeys: ["model", "input"] },
);

/**
 * The format's core fields only (what interface.md shows) and a plain conversation of the user's text, so
 * that many combinations are served: the formats refuse a tool turn that answers no call, or a field they
 * do not have, and the full bodies above are mostly refused.
 */
const core = (fields: Record<string, unknown>) =>
  Object.fromEntries(
    Object.entries({ ...fields, ...plainConversation(fields) }).filter(([name]) =>
      [
        "model",
        "messages",
        "input",
        "instructions",
        "stream",
        "temperature",
        "top_p",
        "max_tokens",
        "max_output_tokens",
      ].includes(name),
    ),
  );

function plainConversation(fields: Record<string, unknown>): Record<string, unknown> {
  const userText = (message: unknown) => {
    const content = (message as { content?: unknown } | null)?.content;
    return { role: "user", content: typeof content === "string" ? content : "Hello." };
  };
  if (Array.isArray(fields.messages)) return { messages: fields.messages.map(userText) };
  if (Array.isArray(fields.input)) return { input: fields.input.map(userText) };
  return {};
}

/** The body's own fields, random extra ones, and perhaps a hostile value in one field (or as the body). */
const generationRequest = fc
  .tuple(
    fc.constantFrom("/chat/completions", "/responses"),
    chatBody,
    responsesBody,
    extraFields,
    // Two in three bodies keep to the core fields: the full ones are mostly refused, by design.
    fc.oneof({ arbitrary: fc.constant(true), weight: 2 }, { arbitrary: fc.constant(false), weight: 1 }),
    fc.option(fc.tuple(fc.nat(), hostileValue), { freq: 3 }),
  )
  .map(([path, chat, responses, extra, coreOnly, hostile]) => {
    const own = path === "/chat/completions" ? chat : responses;
    const fields: Record<string, unknown> = coreOnly ? core(own) : { ...extra, ...own };
    const names = [...Object.keys(fields), "content", "extra", undefined];
    const field = hostile ? names[hostile[0] % names.length] : undefined;
    return { path, fields, hostile: hostile ? { field, value: hostile[1] } : undefined };
  });

let harness: GatewayHarness;
let apiKey: string;

beforeAll(async () => {
  harness = await startGatewayHarness({ label: "fuzz_generation" });
  const session = await harness.session("fuzz-generation");
  apiKey = (await harness.issueKey(session)).key;
  await harness.topUp({ kind: "user", id: "fuzz-generation" }, "10000000");
}, 60_000);
afterAll(async () => {
  await harness?.close();
});

/** `content` is the text of the last message: message text may carry anything, it is sent, not stored. */
function bodyTextOf(
  path: string,
  fields: Record<string, unknown>,
  hostile?: { field: string | undefined; value: Hostile },
) {
  if (!hostile) return JSON.stringify(fields);
  if (hostile.field !== "content") return bodyWith(fields, hostile.field, hostile.value);
  const conversation = { ...fields, model: "alpha-5.4-mini" };
  const key = path === "/chat/completions" ? "messages" : "input";
  const withMessage = bodyWith({ role: "user" }, "content", hostile.value);
  return JSON.stringify({ ...conversation, [key]: "\u0001message\u0001" }).replace(
    JSON.stringify("\u0001message\u0001"),
    () => `[${withMessage}]`,
  );
}

type Served = "refused" | "json" | "stream" | "ledger unavailable";

function judge(path: string, answer: Answer, context: string): Served {
  if (isLedgerUnavailable(answer)) return "ledger unavailable";
  expect(answer.status, context).toBeLessThan(500);
  if (answer.status >= 400) {
    expectErrorBody(answer, context);
    return "refused";
  }
  expect(answer.status, context).toBe(200);
  if (answer.contentType.startsWith("text/event-stream")) {
    expect(answer.text.endsWith("data: [DONE]\n\n"), context).toBe(true);
    return "stream";
  }
  const reply = JSON.parse(answer.text) as { id?: unknown; object?: unknown };
  expect(reply.id, context).toMatch(path === "/chat/completions" ? /^chatcmpl-\d+$/ : /^resp-\d+$/);
  expect(reply.object, context).toBe(path === "/chat/completions" ? "chat.completion" : "response");
  return "json";
}

describe("given any combination of generation parameters", () => {
  it("then never a 5xx: the error body, the format's reply, or a stream ending in [DONE]", async () => {
    const served = new Map<Served, number>();
    await fc.assert(
      fc.asyncProperty(generationRequest, async ({ path, fields, hostile }) => {
        const body = bodyTextOf(path, fields, hostile);
        const response = await fetch(`${harness.baseUrl}${path}`, {
          method: "POST",
          headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
          body,
        });
        const context = `${path} ${hostile ? `${hostile.value.kind} at ${hostile.field ?? "the whole body"} ` : ""}${body.slice(0, 300)}`;
        const outcome = judge(path, await answerOf(response), context);
        served.set(outcome, (served.get(outcome) ?? 0) + 1);
      }),
      fuzzSettings(150),
    );
    // Not vacuous: combinations were served, JSON and streamed, not only refused.
    expect(served.get("json") ?? 0, JSON.stringify([...served])).toBeGreaterThan(0);
    expect(served.get("stream") ?? 0, JSON.stringify([...served])).toBeGreaterThan(0);
  }, 120_000);

  it("when a message is one 1 MB word, then both formats answer it promptly (the count is bounded)", async () => {
    const word = "x".repeat(megabyteCharacters);
    for (const [path, body] of [
      ["/chat/completions", { model: "gamma-4-3", messages: [{ role: "user", content: word }] }],
      ["/responses", { model: "delta-4.5-haiku", stream: true, input: word }],
    ] as const) {
      const startedMs = performance.now();
      const answer = await answerOf(
        await fetch(`${harness.baseUrl}${path}`, {
          method: "POST",
          headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
          body: JSON.stringify(body),
        }),
      );
      expect(judge(path, answer, path)).not.toBe("refused");
      // Unbounded, the tokenizer alone took many minutes over this one piece.
      expect(performance.now() - startedMs).toBeLessThan(15_000);
    }
  });

  it.each([
    ["NUL", "a\u0000b"],
    ["a lone surrogate", "a\uD800b"],
  ])(
    "when message text holds %s, then both formats answer 200, JSON and streamed",
    async (_label, content) => {
      for (const stream of [false, true]) {
        for (const [path, body] of [
          ["/chat/completions", { model: "gamma-4-3", stream, messages: [{ role: "user", content }] }],
          ["/responses", { model: "beta-3-flash", stream, instructions: content, input: content }],
        ] as const) {
          const response = await fetch(`${harness.baseUrl}${path}`, {
            method: "POST",
            headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
            body: JSON.stringify(body),
          });
          const answer = await answerOf(response);
          expect(answer.status, `${path} stream=${stream}: ${answer.text.slice(0, 200)}`).toBe(200);
          judge(path, answer, path);
        }
      }
    },
  );
});
