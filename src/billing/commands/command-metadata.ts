import type { EventMetadata } from "../../ledger/events";
import type { Clock } from "./projection-waiting";

/** Who asked for a write and in answer to what: every event carries it (C6, C8). */
export interface CommandOrigin {
  /** `admin`, `system:<component>`, `user:<id>`. */
  actor: string;
  /** The HTTP request id (`x-request-id`) or job that caused the write. */
  correlationId?: string;
}

export function metadataOf(origin: CommandOrigin, clock: Clock): EventMetadata {
  return {
    actor: origin.actor,
    ...(origin.correlationId === undefined ? {} : { correlationId: origin.correlationId }),
    occurredAt: clock().toISOString(),
  };
}
