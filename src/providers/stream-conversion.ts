import type { ServerSentEvent } from "./http/server-sent-events";
import type { FinishReason, GenerationStreamPart, ReportedInput, ReportedUsage } from "./provider";
import { closingParts } from "./stream-closing";

/**
 * One protocol's stream events to stream parts, as a synchronous state machine: `convert` adds the parts
 * an event carries (or throws for a failure the upstream reported); once the body has ended, `outcome`
 * tells what the stream reported (no finish reason: it was cut short). `usageSoFar`, for a protocol that
 * reports usage before its end: what it has reported until now.
 */
export interface StreamConversion {
  convert(event: ServerSentEvent, parts: GenerationStreamPart[]): void;
  usageSoFar?(): ReportedUsage | null;
  outcome(): { usage: ReportedUsage | null; finishReason: FinishReason | undefined };
}

/**
 * Drives a conversion over the event batches of an upstream body. The parts of one batch travel together:
 * one await per upstream read, not one per event at every layer. When an event fails, the parts before it
 * in its batch are still yielded first, because they were produced: they reach the client and are billed.
 * Input counts reported so far lead a batch of output when they are news, so that a stream cut before its
 * final usage is billed the input the upstream counted. Never alone: the caller takes a first batch as the
 * answer begun (no retry after it), and a cut before any output bills nothing anyway.
 */
export async function* convertEventStream(
  batches: AsyncIterable<readonly ServerSentEvent[]>,
  conversion: StreamConversion,
): AsyncGenerator<GenerationStreamPart[]> {
  let inputSent: ReportedInput | null = null;
  const withNewInput = (parts: GenerationStreamPart[]): GenerationStreamPart[] => {
    const input = reportedInputOf(conversion.usageSoFar?.() ?? null);
    if (input === null || sameInput(input, inputSent)) return parts;
    inputSent = input;
    return [{ type: "input-usage", usage: input }, ...parts];
  };
  for await (const events of batches) {
    const parts: GenerationStreamPart[] = [];
    try {
      for (const event of events) conversion.convert(event, parts);
    } catch (error) {
      if (parts.length > 0) yield withNewInput(parts);
      throw error;
    }
    if (parts.length > 0) yield withNewInput(parts);
  }
  const { usage, finishReason } = conversion.outcome();
  yield [...closingParts(usage, finishReason)];
}

/** The input counts of a usage, when it has them: cached input is a part of the input, never alone. */
export function reportedInputOf(usage: ReportedUsage | null): ReportedInput | null {
  if (usage?.inputTokens == null) return null;
  return { inputTokens: usage.inputTokens, cachedInputTokens: usage.cachedInputTokens };
}

function sameInput(one: ReportedInput, other: ReportedInput | null): boolean {
  return one.inputTokens === other?.inputTokens && one.cachedInputTokens === other.cachedInputTokens;
}
