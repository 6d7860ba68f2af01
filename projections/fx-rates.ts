import { defineTable, type ProjectionDefinition } from "../src/ledger/projection/projection";
import { otherEventRows } from "../src/ledger/rebuild/parsed-events";
import type { RecordedEventOf } from "../src/ledger/store/event-store";

/**
 * Every FX rate update; the rate for a Seoul date is the latest update for the latest date ≤ it. Each day's
 * rates are one stream (`fx-rate-<day>`), so its stream version orders two set in one millisecond as the log
 * does.
 */

type Row = {
  event_id: string;
  applies_on: string;
  rate_date: string;
  rate_krw_per_usd: string;
  source: string;
  recorded_at: string;
  stream_version: number;
};

export const fxRatesTable = defineTable<Row>({
  name: "projection_fx_rates",
  columns: {
    event_id: "text",
    applies_on: "date",
    rate_date: "date",
    rate_krw_per_usd: "numeric",
    source: "text",
    recorded_at: "timestamptz",
    stream_version: "integer",
  },
  primaryKey: ["event_id"],
  indexes: [
    "CREATE INDEX IF NOT EXISTS projection_fx_rates_applies_on ON projection_fx_rates (applies_on DESC, recorded_at DESC)",
  ],
});

export const fxRatesProjection: ProjectionDefinition = {
  name: "fx-rates",
  version: 2,
  handles: new Set(["FxRateUpdated"]),
  tables: [fxRatesTable],
  evolve(rows, recorded) {
    const event = recorded as RecordedEventOf<"FxRateUpdated">;
    rows.put(fxRatesTable, {
      event_id: event.eventId,
      applies_on: event.data.appliesOn,
      rate_date: event.data.rateDate,
      rate_krw_per_usd: event.data.rateKrwPerUsd,
      source: event.data.source,
      recorded_at: event.metadata.occurredAt,
      stream_version: event.streamVersion,
    });
  },
  sqlFold: {
    statements: (into) => [
      `INSERT INTO ${into(fxRatesTable)} (event_id, applies_on, rate_date, rate_krw_per_usd, source, recorded_at,
         stream_version)
       SELECT event_id, applies_on, rate_date, rate_krw_per_usd, source, occurred_at, stream_version
       FROM ${otherEventRows.table} WHERE type = 'FxRateUpdated'`,
    ],
  },
};
