import { randomUUID } from "node:crypto";
import { type EventData, parseLedgerEvent } from "../../ledger/events";
import type { AppendResult, EventStore, ExpectedVersion } from "../../ledger/store/event-store";
import { type CommandOrigin, metadataOf } from "../commands/command-metadata";
import { fxRateUpdatedEventId } from "../commands/deterministic-event-id";
import type { Clock } from "../commands/projection-waiting";

/**
 * Appends one `FxRateUpdated` to the stream of the day it applies on (`fx-rate-<YYYY-MM-DD>`). Automatic
 * rates (bank, default) carry an id derived from (day, source), so recording one twice keeps one event;
 * admin rates get a fresh id each, because each admin call is a new correction.
 */

export type FxRateUpdate = EventData<"FxRateUpdated">;

export const fxRateStreamIdOf = (appliesOn: string) => `fx-rate-${appliesOn}`;

export function fxRateEventIdOf(update: FxRateUpdate): string {
  switch (update.source) {
    case "koreaexim":
    case "default":
      return fxRateUpdatedEventId(update.appliesOn, update.source);
    case "admin":
      return randomUUID();
    default: {
      const unreachable: never = update.source;
      throw new Error(`unhandled FX source ${String(unreachable)}`);
    }
  }
}

export async function recordFxRate(
  dependencies: { store: EventStore; clock: Clock },
  update: FxRateUpdate,
  origin: CommandOrigin,
  target: { streamId: string; expectedVersion: ExpectedVersion } = {
    streamId: fxRateStreamIdOf(update.appliesOn),
    expectedVersion: "any",
  },
): Promise<AppendResult> {
  const event = parseLedgerEvent({
    type: "FxRateUpdated",
    data: update,
    metadata: metadataOf(origin, dependencies.clock),
  });
  return dependencies.store.append({
    streamId: target.streamId,
    expectedVersion: target.expectedVersion,
    events: [{ eventId: fxRateEventIdOf(update), event }],
  });
}
