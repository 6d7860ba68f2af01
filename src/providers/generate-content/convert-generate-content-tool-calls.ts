import type { ToolCall } from "../provider";
import type { GenerateContentResponse } from "./generate-content-schemas";
import { toolCallIdOf } from "./generate-content-tool-call-id";

/**
 * The function calls of the first candidate, in order. A call arrives whole, its arguments an object, so
 * the arguments text is that object's JSON.
 */
export function candidateToolCalls(response: GenerateContentResponse): ToolCall[] {
  const parts = response.candidates?.[0]?.content?.parts ?? [];
  return parts.flatMap((part) => {
    const call = part.functionCall;
    if (!call) return [];
    return [
      {
        id: toolCallIdOf(call.id, part.thoughtSignature),
        name: call.name,
        arguments: JSON.stringify(call.args ?? {}),
      },
    ];
  });
}
