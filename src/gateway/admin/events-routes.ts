import type { Router } from "express";
import type { LedgerEventType } from "../../ledger/events";
import { browseEventLog } from "../../ledger/store/event-log-browser";
import type { RecordedEvent } from "../../ledger/store/event-store";
import {
  compareLogPositions,
  formatLogPosition,
  type LogPosition,
  logStart,
  parseLogPosition,
} from "../../ledger/store/log-position";
import { apiErrors } from "../api-error";
import { type AdminContext, parseWith } from "./admin-context";
import { eventsQuerySchema } from "./admin-request-schemas";

/**
 * `GET /events?stream&type&order&before&after&limit`: the raw ledger a page at a time, each event with its
 * id and its opaque position.
 *
 * - In log order by default (C6: "the raw ledger, in order"): `next` is the position to pass back as
 *   `after`, null only for an empty page — pass it later to follow the log. `after=0` is the log's start.
 *   Without `type`, this reads through the event store.
 * - Newest first with `order=desc`, or whenever `before` is given (the console's event browser): `next` is
 *   the position to pass as `before` for the next (older) page, null on the last page.
 * - `type` filters on the server (comma-separated event types), in either order.
 *
 * Newest first and `type` read the PostgreSQL log directly; on the EventStoreDB store they are refused.
 */
export function addEventsRoutes(router: Router, context: AdminContext): void {
  router.get("/events", async (request, response) => {
    const query = parseWith(eventsQuerySchema, request.query);
    const after = query.after === undefined ? undefined : positionOf(query.after, "after");
    const before = query.before === undefined ? undefined : positionOf(query.before, "before");
    const order = query.order ?? (before !== undefined ? "desc" : "asc");
    const types = query.type as LedgerEventType[] | undefined;
    const followsTheLog = order === "asc" && types === undefined && before === undefined;
    if (!followsTheLog && context.store.kind !== "postgresql")
      throw apiErrors.validation("order, before and type need the PostgreSQL event store");
    // Browsed, one more than the page: whether an older page exists, so the last one says it is the last.
    const read = followsTheLog
      ? await readInLogOrder(context, query.stream, after, query.limit)
      : await browseEventLog(context.database, {
          order,
          types,
          streamId: query.stream,
          after,
          before,
          limit: query.limit + 1,
        });
    const events = read.slice(0, query.limit);
    const last = events[events.length - 1];
    const next =
      last === undefined || (order === "desc" && read.length <= query.limit)
        ? null
        : formatLogPosition(last.position);
    response.json({ order, data: events.map(eventJsonOf), next });
  });
}

async function readInLogOrder(
  context: AdminContext,
  stream: string | undefined,
  after: LogPosition | undefined,
  limit: number,
): Promise<RecordedEvent[]> {
  if (stream === undefined) return context.store.readAll({ limit, ...(after ? { after } : {}) });
  return (await context.store.readStream(stream))
    .filter((event) => after === undefined || compareLogPositions(event.position, after) > 0)
    .slice(0, limit);
}

/**
 * No store hands out a position beyond a signed 64-bit pair (PostgreSQL's `bigint`s; EventStoreDB's would
 * take a log of exabytes), so anything outside one is no `next` of ours, and PostgreSQL could not compare it.
 */
const positionPartMax = 2n ** 63n - 1n;

function positionOf(text: string, field: "after" | "before"): LogPosition {
  if (field === "after" && text === "0") return logStart;
  const invalid = () =>
    apiErrors.validation(`${field}: must be a position returned as next by a previous page`);
  let position: LogPosition;
  try {
    position = parseLogPosition(text);
  } catch {
    throw invalid();
  }
  const withinRange = (part: bigint) => part >= logStart.commit && part <= positionPartMax;
  if (!withinRange(position.commit) || !withinRange(position.prepare)) throw invalid();
  return position;
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
