import { assert } from "../../kernel/assert";
import type { RecordedEvent, RecordedEventOf } from "../../ledger/store/event-store";
import { assertContiguousVersions } from "../money-invariants";

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
  /**
   * The model the request asked for: its hold's. `recorded` names the one that answered (a configured
   * fallback's in its place); without a hold in the stream, that is all there is.
   */
  requestedModel: string;
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
  const hold = stream[0]?.type === "UsageAuthorized" ? stream[0] : undefined;
  const rest = stream.slice(hold ? 1 : 0);
  if (rest.length === 0) return { kind: "not-recorded" };
  const shapeOf = () => `not a usage stream: ${stream.map((event) => event.type).join(", ")}`;
  const [first, ...after] = rest;
  if (first?.type !== "UsageRecorded" || first.data.corrects) return { kind: "malformed", reason: shapeOf() };
  // The next append expects the last version read: with a gap, "last" would not be the stream's last.
  assertContiguousVersions(stream, first.streamId);
  const state: UsageStreamState = {
    requestedModel: hold?.data.model ?? first.data.model,
    recorded: first,
    charged: undefined,
    correction: undefined,
    correctionCharged: undefined,
    version: stream.length - 1,
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

/**
 * The version a charge of this state is appended at: the last event the state accounts for, so a charge
 * appended by anyone else since (or any other event) makes the store refuse this one — exactly-once (C7).
 */
export function expectedVersionOf(state: UsageStreamState): number {
  const read = [state.recorded, state.charged, state.correction, state.correctionCharged];
  const lastRead = Math.max(...read.map((event) => event?.streamVersion ?? -1));
  assert(
    state.version === lastRead,
    `${state.recorded.streamId} is at version ${state.version}, but its last usage or charge is at ${lastRead}`,
  );
  return state.version;
}
