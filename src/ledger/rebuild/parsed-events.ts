/**
 * The log's events as typed rows, for the projections' SQL folds. `data` is json (text): every read of a
 * field parses the whole document again, and parsing, not writing, is what a rebuild in SQL spends most on
 * (PostgreSQL parses json at about 100–200 MB/s per core). So each chunk of the log is parsed once, into
 * three temporary tables every SQL fold reads:
 *
 * - `rebuild_usage_charged` and `rebuild_usage_recorded`, the two kinds of event most of a ledger is;
 * - `rebuild_other_events`, every other kind, `type` telling which, with the fields the folds use (null
 *   where a kind has no such field).
 *
 * Each row has its event's log position (`transaction_order`, `position`: the log's order) and
 * `occurred_at`, the event's `metadata.occurredAt`. Fields a v1 event lacks are null.
 */

interface ParsedEvents {
  readonly table: string;
  readonly where: string;
  /** The table's columns from the parsed record (`parsed`) and the event row (`event`). */
  readonly columns: string;
  /** What `json_to_record` reads: the fields the columns use, with their SQL types. */
  readonly record: string;
  /** More to parse from the record (a nested object), as LATERAL joins. */
  readonly nested?: string;
}

const occurredAt = `(event.metadata->>'occurredAt')::timestamptz AS occurred_at`;

export const usageChargedRows = {
  table: "rebuild_usage_charged",
  where: `event.type = 'UsageCharged'`,
  columns: `parsed."requestId" AS request_id, parsed."keyId" AS key_id, parsed.account->>'kind' AS account_kind,
    parsed.account->>'id' AS account_id, parsed.model, parsed.endpoint, parsed."startedAt" AS started_at,
    parsed."amountWon" AS amount_won, parsed.breakdown, tokens.input AS input_tokens,
    tokens.cached AS cached_tokens, tokens.output AS output_tokens, tokens.reasoning AS reasoning_tokens,
    parsed.correction, ${occurredAt}`,
  // `correction`: null but on the charge of a correcting usage (rare), whose fields the folds read themselves.
  record: `"requestId" text, "keyId" text, account json, model text, endpoint text, "startedAt" timestamptz,
    "amountWon" numeric, breakdown json, correction json`,
  nested: `LEFT JOIN LATERAL json_to_record(parsed.breakdown) AS charge(tokens json) ON true
    LEFT JOIN LATERAL json_to_record(charge.tokens) AS tokens(input bigint, cached bigint, output bigint,
      reasoning bigint) ON true`,
} as const satisfies ParsedEvents;

export const usageRecordedRows = {
  table: "rebuild_usage_recorded",
  where: `event.type = 'UsageRecorded'`,
  columns: `parsed."requestId" AS request_id, parsed.account->>'kind' AS account_kind,
    parsed.account->>'id' AS account_id, parsed.model, parsed."startedAt" AS started_at, parsed.tokens,
    parsed."usageSource" AS usage_source, ${occurredAt}`,
  record: `"requestId" text, account json, model text, "startedAt" timestamptz, tokens json, "usageSource" text`,
} as const satisfies ParsedEvents;

export const otherEventRows = {
  table: "rebuild_other_events",
  where: `event.type NOT IN ('UsageCharged', 'UsageRecorded')`,
  columns: `event.type, event.event_id::text, parsed."keyId" AS key_id, parsed.owner->>'kind' AS owner_kind,
    parsed.owner->>'id' AS owner_id, parsed."issuedByUserId" AS issued_by_user_id, parsed.name,
    parsed.description, parsed."keyHash" AS key_hash, parsed."keyPreview" AS key_preview, parsed.status,
    parsed.account->>'kind' AS account_kind, parsed.account->>'id' AS account_id,
    parsed."amountWon" AS amount_won, parsed.reference, parsed.model,
    parsed."inputUsdPerMillionTokens" AS input_usd_per_million_tokens,
    parsed."outputUsdPerMillionTokens" AS output_usd_per_million_tokens,
    parsed."cachedInputUsdPerMillionTokens" AS cached_input_usd_per_million_tokens,
    parsed."organizationId" AS organization_id, parsed.rate, parsed."appliesOn" AS applies_on,
    parsed."rateDate" AS rate_date, parsed."rateKrwPerUsd" AS rate_krw_per_usd, parsed.source,
    parsed."userId" AS user_id, parsed.role, parsed."balanceBelowWon" AS balance_below_won,
    parsed."webhookId" AS webhook_id, parsed.url, parsed.events, ${occurredAt}`,
  // Each field typed as every kind of event that has one holds it (a kind holding, say, an object where
  // another holds text would fail the cast; the event catalog has none).
  record: `"keyId" text, owner json, "issuedByUserId" text, name text, description text, "keyHash" text,
    "keyPreview" text, status integer, account json, "amountWon" numeric, reference text, model text,
    "inputUsdPerMillionTokens" numeric, "outputUsdPerMillionTokens" numeric,
    "cachedInputUsdPerMillionTokens" numeric, "organizationId" text, rate numeric, "appliesOn" date,
    "rateDate" date, "rateKrwPerUsd" numeric, source text, "userId" text, role text,
    "balanceBelowWon" numeric, "webhookId" text, url text, events json`,
} as const satisfies ParsedEvents;

const everyKind: readonly ParsedEvents[] = [usageChargedRows, usageRecordedRows, otherEventRows];

/** A chunk of the log: the events of the transactions ordered after `afterOrder`, up to `upToOrder`. */
export interface ChunkBounds {
  afterOrder: bigint;
  upToOrder: bigint;
}

/**
 * Parses a chunk's events into the three tables (dropped at commit, or replaced by the next chunk's), and
 * returns how many events it parsed: every event of the chunk lands in exactly one of them.
 */
export async function parseChunk(
  client: { query(text: string): Promise<{ rowCount: number | null }> },
  chunk: ChunkBounds,
): Promise<number> {
  let events = 0;
  for (const parsed of everyKind) {
    await client.query(`DROP TABLE IF EXISTS ${parsed.table}`);
    // CREATE TABLE AS, not INSERT … SELECT: the parse may then run in parallel workers.
    const created = await client.query(
      `CREATE TEMPORARY TABLE ${parsed.table} ON COMMIT DROP AS
       SELECT event.transaction_order, event.position, ${parsed.columns}
       FROM ledger_events event CROSS JOIN LATERAL json_to_record(event.data) AS parsed(${parsed.record})
       ${parsed.nested ?? ""}
       WHERE ${parsed.where}
         AND event.transaction_order > ${chunk.afterOrder} AND event.transaction_order <= ${chunk.upToOrder}`,
    );
    events += created.rowCount ?? 0;
  }
  return events;
}

export async function dropParsedChunk(client: { query(text: string): Promise<unknown> }): Promise<void> {
  for (const parsed of everyKind) await client.query(`DROP TABLE IF EXISTS ${parsed.table}`);
}
