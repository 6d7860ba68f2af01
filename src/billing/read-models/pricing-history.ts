import type pg from "pg";
import { discountsTable } from "../../../projections/discounts";
import { pricesTable } from "../../../projections/prices";
import { canonicalMoney } from "../../kernel/money";
import type { EventStore, RecordedEvent, RecordedEventOf } from "../../ledger/store/event-store";
import { compareLogPositions } from "../../ledger/store/log-position";
import { discountStreamIdOf } from "../commands/set-discount";
import { modelPriceStreamIdOf } from "../commands/set-model-price";

/**
 * Who changed a price or a discount, when, and to what: read from the ledger's own streams (one per model,
 * one per discount scope), because the projections keep the values but not the actor. Those streams grow
 * by one event per admin change, so reading them whole stays cheap; the answer is cut at `limit`.
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

/** The price changes of the given models, newest first, at most `limit`. */
export async function readPriceHistory(
  store: EventStore,
  models: readonly string[],
  limit: number,
): Promise<PriceChange[]> {
  const streams = await store.readStreams(models.map(modelPriceStreamIdOf));
  const changes = [...streams.values()].flat().filter(isOfType("ModelPriceSet"));
  return newestFirst(changes)
    .slice(0, limit)
    .map((event) => ({
      ...authorOf(event),
      model: event.data.model,
      // A ledger's first prices were seeded as the catalog wrote them ("10.00"): shown in money's one form.
      inputUsdPer1M: canonicalMoney(event.data.inputUsdPerMillionTokens),
      outputUsdPer1M: canonicalMoney(event.data.outputUsdPerMillionTokens),
      cachedInputUsdPer1M: canonicalMoney(event.data.cachedInputUsdPerMillionTokens),
    }));
}

/**
 * The discount changes newest first, at most `limit`, read from the `scopesMax` scopes changed last: the
 * newest `limit` changes lie in at most `limit` scopes, each among those changed last, so however many
 * scopes there are, none of them is left out for a scope that sorts first.
 */
export async function readDiscountHistory(
  store: EventStore,
  database: Database,
  options: { limit: number; scopesMax: number },
): Promise<DiscountChange[]> {
  const scopes = await database.query<{ model: string | null; organization_id: string | null }>(
    `SELECT model, organization_id FROM ${discountsTable.name}
     GROUP BY model, organization_id
     ORDER BY max(effective_at) DESC, model NULLS FIRST, organization_id NULLS FIRST LIMIT $1`,
    [options.scopesMax],
  );
  const streams = await store.readStreams(
    scopes.rows.map((scope) =>
      discountStreamIdOf({ model: scope.model, organizationId: scope.organization_id }),
    ),
  );
  const changes = [...streams.values()].flat().filter(isOfType("DiscountSet"));
  return newestFirst(changes)
    .slice(0, options.limit)
    .map((event) => ({
      ...authorOf(event),
      model: event.data.model,
      organizationId: event.data.organizationId,
      rate: event.data.rate,
    }));
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

/** By the instant it took effect, then by log position (the order the projections apply them in). */
function newestFirst<Event extends RecordedEvent>(events: Event[]): Event[] {
  return events.sort((left, right) =>
    left.metadata.occurredAt === right.metadata.occurredAt
      ? compareLogPositions(right.position, left.position)
      : right.metadata.occurredAt.localeCompare(left.metadata.occurredAt),
  );
}
