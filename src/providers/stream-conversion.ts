import type { ServerSentEvent } from "./http/server-sent-events";
import type { FinishReason, GenerationStreamPart, ReportedUsage } from "./provider";
import { closingParts } from "./stream-closing";

/**
 * One protocol's stream events to stream parts, as a synchronous state machine: `convert` adds the parts
 * an event carries (or throws for a failure the upstream reported); once the body has ended, `outcome`
 * tells what the stream reported (no finish reason: it was cut short).
 */
export interface StreamConversion {
  convert(event: ServerSentEvent, parts: GenerationStreamPart[]): void;
  outcome(): { usage: ReportedUsage | null; finishReason: FinishReason | undefined };
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
  const { usage, finishReason } = conversion.outcome();
  yield [...closingParts(usage, finishReason)];
}
