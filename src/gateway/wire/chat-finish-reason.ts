import type { FinishReason } from "../../providers/provider";

/** The values of `finish_reason` the gateway shows. */
export type ChatFinishReason = "stop" | "length" | "content_filter" | "tool_calls";

/** "other" (an upstream reason with no equivalent here) reads as "stop": the text ended and is all there is. */
export function chatFinishReasonOf(finishReason: FinishReason): ChatFinishReason {
  switch (finishReason) {
    case "stop":
    case "other":
      return "stop";
    case "length":
      return "length";
    case "content_filter":
      return "content_filter";
    case "tool_calls":
      return "tool_calls";
    default: {
      const unknownReason: never = finishReason;
      throw new Error(`unknown finish reason: ${String(unknownReason)}`);
    }
  }
}
