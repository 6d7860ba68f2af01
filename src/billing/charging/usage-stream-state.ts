import type { RecordedEvent, RecordedEventOf } from "../../ledger/store/event-store";

/**
 * What a request's usage stream (`usage-<requestId>`) says about its charging. The stream grows in one of
 * these shapes, each a prefix of the next:
 *
 *   [UsageAuthorized]  UsageRecorded  UsageCharged                                   (the usual request)
 *   [UsageAuthorized]  UsageRecorded  [UsageCharged]  UsageRecorded′  …  UsageCharged′ (corrected, C10)
 *
 * The hold is absent only for usage recorded before holds existed. `UsageRecorded′` corrects the first
 * record (the orphan sweep's estimate) with what the serving gateway delivered; its charge `UsageCharged′`
 * follows the first charge, appended with it when neither was charged yet. A request is corrected at most
 * once: only the gateway that served it writes a correction, and it settles a request once.
 */
export interface UsageStreamState {
  recorded: RecordedEventOf<"UsageRecorded">;
  charged: RecordedEventOf<"UsageCharged"> | undefined;
  correction: RecordedEventOf<"UsageRecorded"> | undefined;
  correctionCharged: RecordedEventOf<"UsageCharged"> | undefined;
  /** The version of the stream's last event: what the next append expects. */
  version: number;
}

export type UsageStreamReading =
  | { kind: "state"; state: UsageStreamState }
  | { kind: "not-recorded" }
  | { kind: "malformed"; reason: string };

export function readUsageStream(stream: readonly RecordedEvent[]): UsageStreamReading {
  const start = stream[0]?.type === "UsageAuthorized" ? 1 : 0;
  const rest = stream.slice(start);
  if (rest.length === 0) return { kind: "not-recorded" };
  const shapeOf = () => `not a usage stream: ${stream.map((event) => event.type).join(", ")}`;
  const [first, ...after] = rest;
  if (first?.type !== "UsageRecorded" || first.data.corrects) return { kind: "malformed", reason: shapeOf() };
  const state: UsageStreamState = {
    recorded: first,
    charged: undefined,
    correction: undefined,
    correctionCharged: undefined,
    version: stream[stream.length - 1]!.streamVersion,
  };
  for (const event of after) {
    if (
      event.type === "UsageCharged" &&
      !event.data.correction &&
      !state.charged &&
      !state.correctionCharged
    ) {
      state.charged = event;
    } else if (event.type === "UsageRecorded" && event.data.corrects && !state.correction) {
      if (event.data.corrects.eventId !== first.eventId)
        return { kind: "malformed", reason: `${shapeOf()} (the correction names another usage)` };
      state.correction = event;
    } else if (
      event.type === "UsageCharged" &&
      event.data.correction &&
      state.correction &&
      state.charged &&
      !state.correctionCharged
    ) {
      state.correctionCharged = event;
    } else {
      return { kind: "malformed", reason: shapeOf() };
    }
  }
  return { kind: "state", state };
}

/** Whether every usage of the stream has its charge. */
export function isFullyCharged(state: UsageStreamState): boolean {
  return (
    state.charged !== undefined && (state.correction === undefined || state.correctionCharged !== undefined)
  );
}
