import type { FinishReason } from "../provider";

type KnownMessagesStopReason =
  | "end_turn"
  | "stop_sequence"
  | "max_tokens"
  | "model_context_window_exceeded"
  | "refusal"
  | "tool_use"
  | "pause_turn";

const stopReasons: Readonly<Record<KnownMessagesStopReason, FinishReason>> = {
  end_turn: "stop",
  stop_sequence: "stop",
  max_tokens: "length",
  model_context_window_exceeded: "length",
  refusal: "content_filter",
  tool_use: "tool_calls",
  pause_turn: "other",
};

/**
 * Upstreams add reasons over time; an unknown one is "other" rather than a malformed reply. A reply that
 * ended in tool use but called only the answer tool (json_object output) answered in full: "stop".
 */
export function mapMessagesFinishReason(stopReason: string, clientToolCallCount: number): FinishReason {
  if (stopReason === "tool_use" && clientToolCallCount === 0) return "stop";
  return Object.hasOwn(stopReasons, stopReason)
    ? stopReasons[stopReason as KnownMessagesStopReason]
    : "other";
}
