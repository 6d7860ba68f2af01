import { defineTable, type ProjectionDefinition } from "../src/ledger/projection/projection";
import { otherEventRows } from "../src/ledger/rebuild/parsed-events";
import type { RecordedEventOf } from "../src/ledger/store/event-store";

/**
 * Price history per model; the price in force at an instant is the latest set at or before it. Each model's
 * prices are one stream, so its stream version orders two set in one millisecond as the log does.
 */

type Row = {
  event_id: string;
  model: string;
  input_usd_per_million_tokens: string;
  output_usd_per_million_tokens: string;
  cached_input_usd_per_million_tokens: string;
  effective_at: string;
  stream_version: number;
};

export const pricesTable = defineTable<Row>({
  name: "projection_model_prices",
  columns: {
    event_id: "text",
    model: "text",
    input_usd_per_million_tokens: "numeric",
    output_usd_per_million_tokens: "numeric",
    cached_input_usd_per_million_tokens: "numeric",
    effective_at: "timestamptz",
    stream_version: "integer",
  },
  primaryKey: ["event_id"],
  indexes: [
    "CREATE INDEX IF NOT EXISTS projection_model_prices_model ON projection_model_prices (model, effective_at DESC)",
  ],
});

export const pricesProjection: ProjectionDefinition = {
  name: "prices",
  version: 2,
  handles: new Set(["ModelPriceSet"]),
  tables: [pricesTable],
  evolve(rows, recorded) {
    const event = recorded as RecordedEventOf<"ModelPriceSet">;
    rows.put(pricesTable, {
      event_id: event.eventId,
      model: event.data.model,
      input_usd_per_million_tokens: event.data.inputUsdPerMillionTokens,
      output_usd_per_million_tokens: event.data.outputUsdPerMillionTokens,
      cached_input_usd_per_million_tokens: event.data.cachedInputUsdPerMillionTokens,
      effective_at: event.metadata.occurredAt,
      stream_version: event.streamVersion,
    });
  },
  sqlFold: {
    statements: (into) => [
      `INSERT INTO ${into(pricesTable)} (event_id, model, input_usd_per_million_tokens,
         output_usd_per_million_tokens, cached_input_usd_per_million_tokens, effective_at, stream_version)
       SELECT event_id, model, input_usd_per_million_tokens, output_usd_per_million_tokens,
              cached_input_usd_per_million_tokens, occurred_at, stream_version
       FROM ${otherEventRows.table} WHERE type = 'ModelPriceSet'`,
    ],
  },
};
