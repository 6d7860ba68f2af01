import type { GenerationStreamPart } from "../provider";
import { UpstreamFailedError } from "../provider";
import type { ChatCompletionsToolCallDelta } from "./chat-completions-schemas";

/**
 * Streamed tool-call deltas to stream parts. The protocol names a call by `index` on every delta and gives
 * its id and name on the first; calls are numbered here in the order they start, so the parts' indexes run
 * from 0 whatever the upstream's numbering. A delta for a call that never started (no id and name first)
 * cannot be shown to the client as a call, so the reply is malformed.
 */
export class ToolCallDeltaConversion {
  /** The upstream's index of each started call → its position among the reply's calls. */
  private readonly positions = new Map<number, number>();

  convert(deltas: readonly ChatCompletionsToolCallDelta[], parts: GenerationStreamPart[]): void {
    for (const delta of deltas) {
      let index = this.positions.get(delta.index);
      if (index === undefined) {
        const name = delta.function?.name;
        if (!delta.id || !name)
          throw new UpstreamFailedError("malformed", "upstream streamed a tool call without its id and name");
        index = this.positions.size;
        this.positions.set(delta.index, index);
        parts.push({ type: "tool-call-start", index, id: delta.id, name });
      }
      const argumentsDelta = delta.function?.arguments;
      if (argumentsDelta) parts.push({ type: "tool-call-delta", index, argumentsDelta });
    }
  }
}
