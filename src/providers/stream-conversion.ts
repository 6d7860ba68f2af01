import type { ServerSentEvent } from "./http/server-sent-events";
import type { GenerationStreamPart } from "./provider";

/**
 * One protocol's stream events to stream parts, as a synchronous state machine: `convert` adds the parts
 * an event carries (or throws for a failure the upstream reported), `finish` adds the closing ones (or
 * throws when the stream ended before the protocol's finish signal).
 */
export interface StreamConversion {
  convert(event: ServerSentEvent, parts: GenerationStreamPart[]): void;
  finish(parts: GenerationStreamPart[]): void;
}

/**
 * Drives a conversion over the event batches of an upstream body. The parts of one batch travel together:
 * one await per upstream read, not one per event at every layer. When an event fails, the parts before it
 * in its batch are still yielded first, because they were produced: they reach the client and are billed.
 */
export async function* convertEventStream(
  batches: AsyncIterable<readonly ServerSentEvent[]>,
  conversion: StreamConversion,
): AsyncGenerator<GenerationStreamPart[]> {
  for await (const events of batches) {
    const parts: GenerationStreamPart[] = [];
    try {
      for (const event of events) conversion.convert(event, parts);
    } catch (error) {
      if (parts.length > 0) yield parts;
      throw error;
    }
    if (parts.length > 0) yield parts;
  }
  const closing: GenerationStreamPart[] = [];
  conversion.finish(closing);
  yield closing;
}
