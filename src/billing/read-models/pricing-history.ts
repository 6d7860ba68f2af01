import type pg from "pg";
import { discountsTable } from "../../../projections/discounts";
import { pricesTable } from "../../../projections/prices";
import { canonicalMoney } from "../../kernel/money";
import { decodePositionCursor, encodePositionCursor } from "../../kernel/position-cursor";
import type { EventStore, RecordedEvent, RecordedEventOf } from "../../ledger/store/event-store";
import {
  compareLogPositions,
  formatLogPosition,
  type LogPosition,
  parseLogPosition,
} from "../../ledger/store/log-position";
import { discountStreamIdOf } from "../commands/set-discount";
import { modelPriceStreamIdOf } from "../commands/set-model-price";

/**
 * Who changed a price or a discount, when, and to what: read from the ledger's own streams (one per model,
 * one per discount scope), because the projections keep the values but not the actor. Those streams grow
 * by one event per admin change, so reading them whole stays cheap. An answer is a page of at most `limit`
 * changes; the next starts after the last one served, at its place in the histories' order (the instant it
 * took effect, then its log position), never at an offset: a change made between two pages is served in
 * its place, once, or not at all when its place is among the pages served (a change made now is newer than
 * them), and shifts none of the pages after it, so none is served twice or skipped.
 */

type Database = Pick<pg.Pool, "query">;

export interface ChangeAuthor {
  /** `admin`, `admin:<label>`, `system:<component>` (the start-up seed). */
  actor: string;
  correlationId: string | null;
  eventId: string;
  effectiveAt: string;
}

export interface PriceChange extends ChangeAuthor {
  model: string;
  inputUsdPer1M: string;
  outputUsdPer1M: string;
  cachedInputUsdPer1M: string;
}

export interface DiscountChange extends ChangeAuthor {
  model: string | null;
  organizationId: string | null;
  /** null: the scope's rule was removed. */
  rate: string | null;
}

/** Every model a price was ever set for, the catalog's former models included. */
export async function readPricedModels(database: Database): Promise<string[]> {
  const result = await database.query<{ model: string }>(`SELECT DISTINCT model FROM ${pricesTable.name}`);
  return result.rows.map((row) => row.model);
}

/** A change's place in the histories' order, newest first: the instant it took effect, then the log's. */
export interface ChangePosition {
  /** Canonical, to the millisecond. */
  effectiveAt: string;
  position: LogPosition;
}

export interface HistoryPage<Change> {
  data: Change[];
  /** Where the next page starts (after it); null on the last page. */
  next: ChangePosition | null;
}

export interface HistoryPageRequest {
  limit: number;
  /** The `next` of the page before; the newest change first when absent. */
  after?: ChangePosition | undefined;
}

/** A change position as the histories' cursors carry it: the (instant, id) of a position cursor. */
export function encodeChangeCursor(change: ChangePosition): string {
  return encodePositionCursor({
    startedAt: change.effectiveAt,
    requestId: formatLogPosition(change.position),
  });
}

/** undefined for any text `encodeChangeCursor` did not write (another list's cursor, an account's). */
export function decodeChangeCursor(text: string): ChangePosition | undefined {
  const decoded = decodePositionCursor(text, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  if (decoded === undefined || decoded.scope !== undefined) return undefined;
  try {
    return { effectiveAt: decoded.startedAt, position: parseLogPosition(decoded.requestId) };
  } catch {
    return undefined;
  }
}

/** The price changes of the given models, newest first, a page at a time. */
export async function readPriceHistory(
  store: EventStore,
  models: readonly string[],
  page: HistoryPageRequest,
): Promise<HistoryPage<PriceChange>> {
  const streams = await store.readStreams(models.map(modelPriceStreamIdOf));
  const changes = [...streams.values()].flat().filter(isOfType("ModelPriceSet"));
  return pageOf(changes, page, false, (event) => ({
    ...authorOf(event),
    model: event.data.model,
    // A ledger's first prices were seeded as the catalog wrote them ("10.00"): shown in money's one form.
    inputUsdPer1M: canonicalMoney(event.data.inputUsdPerMillionTokens),
    outputUsdPer1M: canonicalMoney(event.data.outputUsdPerMillionTokens),
    cachedInputUsdPer1M: canonicalMoney(event.data.cachedInputUsdPerMillionTokens),
  }));
}

/**
 * The discount changes newest first, a page at a time, read from the `scopesMax` scopes changed last before
 * the page starts: the page's changes lie in at most `limit` scopes, each among those changed last before
 * it, so however many scopes there are, none of them is left out for a scope that sorts first. When more
 * scopes changed before it than were read, the page has a next one, which reads the scopes left. The
 * projection orders changes to the millisecond only (the log orders those of one millisecond), so this is
 * exact unless the changes of more than `scopesMax` scopes share one; a page left empty by that is
 * asserted, never answered as the last.
 */
export async function readDiscountHistory(
  store: EventStore,
  database: Database,
  options: HistoryPageRequest & { scopesMax: number },
): Promise<HistoryPage<DiscountChange>> {
  // Changed before the page starts: at or before its millisecond, whose changes the log position orders.
  const scopes = await database.query<{ model: string | null; organization_id: string | null }>(
    `SELECT model, organization_id FROM ${discountsTable.name}
     WHERE $2::timestamptz IS NULL OR effective_at < $2::timestamptz + interval '1 millisecond'
     GROUP BY model, organization_id
     ORDER BY max(effective_at) DESC, model NULLS FIRST, organization_id NULLS FIRST LIMIT $1`,
    [options.scopesMax + 1, options.after?.effectiveAt ?? null],
  );
  const scopesRead = scopes.rows.slice(0, options.scopesMax);
  const streams = await store.readStreams(
    scopesRead.map((scope) =>
      discountStreamIdOf({ model: scope.model, organizationId: scope.organization_id }),
    ),
  );
  const changes = [...streams.values()].flat().filter(isOfType("DiscountSet"));
  const scopesUnread = scopes.rows.length > options.scopesMax;
  const page = pageOf(changes, options, scopesUnread, (event) => ({
    ...authorOf(event),
    model: event.data.model,
    organizationId: event.data.organizationId,
    rate: event.data.rate,
  }));
  if (scopesUnread && page.data.length === 0)
    throw new Error(
      `more than ${options.scopesMax} discount scopes changed in the millisecond a page starts at (${options.after?.effectiveAt})`,
    );
  return page;
}

const isOfType =
  <Type extends RecordedEvent["type"]>(type: Type) =>
  (recorded: RecordedEvent): recorded is RecordedEventOf<Type> =>
    recorded.type === type;

function authorOf(event: RecordedEvent): ChangeAuthor {
  return {
    actor: event.metadata.actor,
    correlationId: event.metadata.correlationId ?? null,
    eventId: event.eventId,
    effectiveAt: event.metadata.occurredAt,
  };
}

/**
 * The page of `changes` after `page.after`, newest first, each served as `serve` gives it. `othersUnread`:
 * older changes may lie beyond those read, so a page that serves any has a next one.
 */
function pageOf<Event extends RecordedEvent, Change>(
  changes: readonly Event[],
  page: HistoryPageRequest,
  othersUnread: boolean,
  serve: (event: Event) => Change,
): HistoryPage<Change> {
  const { after } = page;
  const placed = changes.map((event) => ({ event, position: positionOf(event) }));
  const left =
    after === undefined ? placed : placed.filter((change) => newerFirst(after, change.position) < 0);
  left.sort((first, second) => newerFirst(first.position, second.position));
  const served = left.slice(0, page.limit);
  const last = served.at(-1);
  return {
    data: served.map((change) => serve(change.event)),
    next: last !== undefined && (left.length > page.limit || othersUnread) ? last.position : null,
  };
}

/** The instant to the millisecond, as a cursor carries it: the orders compare it so, not its text. */
function positionOf(event: RecordedEvent): ChangePosition {
  return { effectiveAt: new Date(event.metadata.occurredAt).toISOString(), position: event.position };
}

/**
 * Negative when `left` comes first newest first: by the instant it took effect, later first, then by log
 * position (the order the projections apply them in), later first.
 */
function newerFirst(left: ChangePosition, right: ChangePosition): number {
  if (left.effectiveAt !== right.effectiveAt) return left.effectiveAt > right.effectiveAt ? -1 : 1;
  return compareLogPositions(right.position, left.position);
}
