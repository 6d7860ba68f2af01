import type { Router } from "express";
import type { RecordedEvent } from "../../ledger/store/event-store";
import {
  compareLogPositions,
  formatLogPosition,
  type LogPosition,
  parseLogPosition,
} from "../../ledger/store/log-position";
import { apiErrors } from "../api-error";
import { type AdminContext, parseWith } from "./admin-context";
import { eventsQuerySchema } from "./admin-request-schemas";

/**
 * `GET /events?stream&after&limit`: the raw ledger in log order, a page at a time. `after` is the opaque
 * position of the last event already seen (the previous page's `next`); `next` is null only for an empty
 * page — pass it back as `after` to continue, or later to follow the log.
 */
export function addEventsRoutes(router: Router, context: AdminContext): void {
  router.get("/events", async (request, response) => {
    const query = parseWith(eventsQuerySchema, request.query);
    const after = query.after === undefined ? undefined : positionOf(query.after);
    const events =
      query.stream === undefined
        ? await context.store.readAll({ limit: query.limit, ...(after ? { after } : {}) })
        : (await context.store.readStream(query.stream))
            .filter((event) => after === undefined || compareLogPositions(event.position, after) > 0)
            .slice(0, query.limit);
    const last = events[events.length - 1];
    response.json({
      data: events.map(eventJsonOf),
      next: last === undefined ? null : formatLogPosition(last.position),
    });
  });
}

function positionOf(text: string): LogPosition {
  try {
    return parseLogPosition(text);
  } catch {
    throw apiErrors.validation("after: must be a position returned as next by a previous page");
  }
}

function eventJsonOf(event: RecordedEvent) {
  return {
    position: formatLogPosition(event.position),
    eventId: event.eventId,
    streamId: event.streamId,
    streamVersion: event.streamVersion,
    type: event.type,
    data: event.data,
    metadata: event.metadata,
    recordedAt: event.recordedAt.toISOString(),
  };
}
