import { describe, expect, it } from "vitest";
import {
  parseChatCompletionsRequest,
  parseChatCompletionsRequestBySchema,
} from "../../../src/gateway/wire/chat-completions-request";
import { plainChatCompletionsRequestOf } from "../../../src/gateway/wire/plain-chat-completions-request";

/**
 * The plain reading of a chat-completions body gives exactly what the schema gives, for every body it
 * reads; every other body, valid or not, it passes on to the schema, so the schema's answers and error
 * messages stand.
 */

const user = { role: "user", content: "Why do rivers bend?" };
const base = { model: "alpha-5.4", messages: [user] };

const plainBodies: Record<string, unknown>[] = [
  base,
  { ...base, stream: true, stream_options: { include_usage: true }, max_tokens: 64 },
  { ...base, stream: false, temperature: 0, top_p: 1, max_completion_tokens: 1 },
  { ...base, temperature: 2, top_p: 0, max_tokens: 9, max_completion_tokens: 9 },
  {
    ...base,
    stream: null,
    stream_options: null,
    temperature: null,
    top_p: null,
    max_tokens: null,
    max_completion_tokens: null,
  },
  {
    ...base,
    max_tokens: 2_147_483_647,
    messages: [
      { role: "system", content: "Be brief." },
      { role: "developer", content: "" },
      user,
      { role: "assistant", content: "Erosion." },
      { role: "user", content: "" },
    ],
  },
];

const passedOnBodies: Record<string, unknown>[] = [
  { ...base, messages: [{ ...user, name: "river" }] },
  { ...base, messages: [{ role: "user", content: [{ type: "text", text: "Hi" }] }] },
  { ...base, messages: [{ role: "assistant", content: null, tool_calls: [] }] },
  { ...base, messages: [{ role: "tool", tool_call_id: "call_1", content: "42" }] },
  { ...base, messages: [{ role: "narrator", content: "Once" }] },
  { ...base, messages: [] },
  { ...base, messages: "Hi" },
  { ...base, model: "" },
  { ...base, model: 5 },
  { messages: [user] },
  { ...base, stream: "yes" },
  { ...base, stream_options: [] },
  { ...base, temperature: 2.5 },
  { ...base, temperature: "0.5" },
  { ...base, top_p: -0.1 },
  { ...base, max_tokens: 0 },
  { ...base, max_tokens: 1.5 },
  { ...base, max_tokens: 1_000_000_000_001 },
  { ...base, max_tokens: Number.MAX_SAFE_INTEGER + 1 },
  { ...base, max_tokens: 10, max_completion_tokens: 20 },
  { ...base, n: 1 },
  { ...base, tools: [] },
  { ...base, user: "someone" },
  { ...base, unknown: true },
];

function schemaOutcomeOf(body: unknown): unknown {
  try {
    return parseChatCompletionsRequestBySchema(body);
  } catch (error) {
    return error;
  }
}

describe("plainChatCompletionsRequestOf", () => {
  it.each(plainBodies.map((body) => [JSON.stringify(body), body]))(
    "reads %s as the schema does",
    (_, body) => {
      const plain = plainChatCompletionsRequestOf(body);
      expect(plain).toBeDefined();
      expect(plain).toStrictEqual(parseChatCompletionsRequestBySchema(body));
    },
  );

  it.each(passedOnBodies.map((body) => [JSON.stringify(body), body]))(
    "passes %s on to the schema, whose answer stands",
    (_, body) => {
      expect(plainChatCompletionsRequestOf(body)).toBeUndefined();
      let outcome: unknown;
      try {
        outcome = parseChatCompletionsRequest(body);
      } catch (error) {
        outcome = error;
      }
      expect(outcome).toStrictEqual(schemaOutcomeOf(body));
    },
  );

  it("passes on what is not an object", () => {
    for (const body of [undefined, null, "text", 5, [base]])
      expect(plainChatCompletionsRequestOf(body)).toBeUndefined();
  });
});
