import { describe, expect, it } from "vitest";
import { convertToChatCompletionsMessages } from "../../src/providers/chat-completions/convert-to-chat-completions-messages";
import type { GenerationMessage } from "../../src/providers/provider";
import { convertToResponsesRequest } from "../../src/providers/responses/convert-to-responses-request";

/**
 * A call's id at the edge of each protocol's length rule (chat completions: at most 40 characters;
 * responses: at most 64). An id within the rule reaches the upstream as the client sent it; one character
 * more and the upstream would refuse it (400), so it is sent as one derived from it, the same for the call
 * and its result.
 */

function conversationWithCall(id: string): GenerationMessage[] {
  return [
    { role: "user", content: [{ type: "text", text: "What time is it?" }] },
    { role: "assistant", content: "", toolCalls: [{ id, name: "get_time", arguments: "{}" }] },
    { role: "tool", toolCallId: id, content: "12:00" },
  ];
}

function chatCompletionsIdsOf(id: string): string[] {
  return convertToChatCompletionsMessages(conversationWithCall(id)).flatMap((message) => [
    ...("tool_calls" in message && message.tool_calls ? message.tool_calls.map((call) => call.id) : []),
    ...("tool_call_id" in message ? [message.tool_call_id] : []),
  ]);
}

function responsesIdsOf(id: string): string[] {
  const request = convertToResponsesRequest(
    { upstreamModelId: "alpha-5.4-pro", messages: conversationWithCall(id) },
    { stream: false },
  );
  return request.input.flatMap((item) => ("call_id" in item ? [item.call_id] : []));
}

describe.each([
  { protocol: "chat completions", charactersMax: 40, idsOf: chatCompletionsIdsOf },
  { protocol: "responses", charactersMax: 64, idsOf: responsesIdsOf },
])("a call id sent to a $protocol upstream", ({ charactersMax, idsOf }) => {
  it(`given an id of exactly ${charactersMax} characters, then the call and its result carry it as sent`, () => {
    const id = `call_${"a".repeat(charactersMax - "call_".length)}`;
    expect(idsOf(id)).toEqual([id, id]);
  });

  it(`given an id of ${charactersMax + 1} characters, then both carry one derived id within the rule`, () => {
    const ids = idsOf(`call_${"a".repeat(charactersMax + 1 - "call_".length)}`);
    expect(ids).toHaveLength(2);
    expect(ids[1]).toBe(ids[0]);
    expect(ids[0]).toMatch(/^call_[0-9a-f]{24}$/);
  });
});
