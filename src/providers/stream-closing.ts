import type { FinishReason, GenerationStreamPart, ReportedUsage } from "./provider";
import { UpstreamFailedError } from "./provider";

/**
 * The parts that close every stream: the usage when the upstream reported it, then the finish. A stream
 * whose body ended before the protocol's finish signal was cut short, which is a failure even though the
 * deltas already yielded stand (the gateway then counts what the upstream did not report, C7).
 */
export function* closingParts(
  usage: ReportedUsage | null,
  finishReason: FinishReason | undefined,
): Generator<GenerationStreamPart> {
  if (finishReason === undefined) {
    throw new UpstreamFailedError("malformed", "upstream stream ended before the generation finished");
  }
  if (usage !== null) yield { type: "usage", usage };
  yield { type: "finish", finishReason };
}
