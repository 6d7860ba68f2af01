import type { FinishReason } from "../provider";

type KnownChatCompletionsFinishReason = "stop" | "length" | "content_filter" | "tool_calls" | "function_call";

const finishReasons: Readonly<Record<KnownChatCompletionsFinishReason, FinishReason>> = {
  stop: "stop",
  length: "length",
  content_filter: "content_filter",
  tool_calls: "tool_calls",
  // The legacy function call is never asked for (the gateway sends tools) and is not read as a tool call.
  function_call: "other",
};

/** Upstreams add reasons over time; an unknown one is "other" rather than a malformed reply. */
export function mapChatCompletionsFinishReason(reason: string): FinishReason {
  return Object.hasOwn(finishReasons, reason)
    ? finishReasons[reason as KnownChatCompletionsFinishReason]
    : "other";
}
