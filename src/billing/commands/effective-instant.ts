import type { RecordedEvent } from "../../ledger/store/event-store";
import type { Clock } from "./projection-waiting";

/**
 * When a change to a stream of changes (a model's prices, a discount scope's rules, a day's FX rates) takes
 * effect: now, or the instant of the stream's latest change when the clock reads earlier than it — another
 * process's clock ahead of this one's, or this one set back. Readers take the change effective latest, so
 * without this a change made after another, answered 200, would never be in force; with it the two share an
 * instant and the log's order puts the later one in force.
 */
export function effectiveInstantAfter(changes: readonly RecordedEvent[], clock: Clock): Date {
  let effective = clock();
  for (const change of changes) {
    const changedAt = new Date(change.metadata.occurredAt);
    if (changedAt > effective) effective = changedAt;
  }
  return effective;
}
