import { defineTable, type ProjectionDefinition } from "../src/ledger/projection/projection";
import { otherEventRows } from "../src/ledger/rebuild/parsed-events";
import type { RecordedEventOf } from "../src/ledger/store/event-store";

/**
 * Discount rule history; a rule keyed by (model or any, organization or any) is replaced by a later one, and
 * a row without a rate removes the scope's rule from its instant on (`DiscountSet` v2). Each scope is one
 * stream, so its stream version orders two changes made in one millisecond as the log does.
 */

type Row = {
  event_id: string;
  model: string | null;
  organization_id: string | null;
  /** null: the scope's rule removed. */
  rate: string | null;
  effective_at: string;
  stream_version: number;
};

export const discountsTable = defineTable<Row>({
  name: "projection_discounts",
  columns: {
    event_id: "text",
    model: "text",
    organization_id: "text",
    rate: "numeric",
    effective_at: "timestamptz",
    stream_version: "integer",
  },
  primaryKey: ["event_id"],
  indexes: [
    "CREATE INDEX IF NOT EXISTS projection_discounts_scope ON projection_discounts (model, organization_id, effective_at DESC)",
  ],
});

export const discountsProjection: ProjectionDefinition = {
  name: "discounts",
  version: 2,
  handles: new Set(["DiscountSet"]),
  tables: [discountsTable],
  evolve(rows, recorded) {
    const event = recorded as RecordedEventOf<"DiscountSet">;
    rows.put(discountsTable, {
      event_id: event.eventId,
      model: event.data.model,
      organization_id: event.data.organizationId,
      rate: event.data.rate,
      effective_at: event.metadata.occurredAt,
      stream_version: event.streamVersion,
    });
  },
  sqlFold: {
    statements: (into) => [
      `INSERT INTO ${into(discountsTable)} (event_id, model, organization_id, rate, effective_at, stream_version)
       SELECT event_id, model, organization_id, rate, occurred_at, stream_version FROM ${otherEventRows.table}
       WHERE type = 'DiscountSet'`,
    ],
  },
};
