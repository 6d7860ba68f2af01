/**
 * The log's events as typed rows, for the projections' SQL folds. `data` is json (text): every read of a
 * field parses the whole document again, and parsing, not writing, is what a rebuild in SQL spends most on
 * (PostgreSQL parses json at about 100–200 MB/s per core). So each chunk of the log is parsed once, into
 * three temporary tables every SQL fold reads:
 *
 * - `parsed_usage_charged` and `parsed_usage_recorded`, the two kinds of event most of a ledger is;
 * - `parsed_other_events`, every other kind, `type` telling which, with the fields the folds use (null
 *   where a kind has no such field).
 *
 * Each row has its event's log position (`transaction_order`, `position`: the log's order) and
 * `occurred_at`, the event's `metadata.occurredAt`. Fields a v1 event lacks are null.
 *
 * A rebuild parses the log chunk by chunk (`parseChunk`); the projection runner parses each live batch
 * (`parseBatch`) into the same tables, so one set of SQL folds serves both.
 */

import type { ClientBase } from "pg";
import type { LogPosition } from "../store/log-position";

interface ParsedEvents {
  readonly table: string;
  readonly where: string;
  /** The table's columns from the parsed record (`parsed`) and the event row (`event`). */
  readonly columns: string;
  /** What `json_to_record` reads: the fields the columns use, with their SQL types. */
  readonly record: string;
  /** More to parse from the record (a nested object), as LATERAL joins. */
  readonly nested?: string;
  /** Whether events of this type land in this table (`where`, in TypeScript). */
  holds(type: string): boolean;
}

const occurredAt = `(event.metadata->>'occurredAt')::timestamptz AS occurred_at`;

export const usageChargedRows = {
  table: "parsed_usage_charged",
  where: `event.type = 'UsageCharged'`,
  holds: (type: string) => type === "UsageCharged",
  columns: `parsed."requestId" AS request_id, parsed."keyId" AS key_id, parsed.account->>'kind' AS account_kind,
    parsed.account->>'id' AS account_id, parsed.model, parsed.endpoint, parsed."startedAt" AS started_at,
    parsed."amountWon" AS amount_won, parsed.breakdown, tokens.input AS input_tokens,
    tokens.cached AS cached_tokens, tokens.output AS output_tokens, tokens.reasoning AS reasoning_tokens,
    parsed.correction, parsed."releasedPendingWon" AS released_pending_won, ${occurredAt}`,
  // `correction`: null but on the charge of a correcting usage (rare), whose fields the folds read themselves.
  record: `"requestId" text, "keyId" text, account json, model text, endpoint text, "startedAt" timestamptz,
    "amountWon" numeric, breakdown json, correction json, "releasedPendingWon" numeric`,
  nested: `LEFT JOIN LATERAL json_to_record(parsed.breakdown) AS charge(tokens json) ON true
    LEFT JOIN LATERAL json_to_record(charge.tokens) AS tokens(input bigint, cached bigint, output bigint,
      reasoning bigint) ON true`,
} as const satisfies ParsedEvents;

export const usageRecordedRows = {
  table: "parsed_usage_recorded",
  where: `event.type = 'UsageRecorded'`,
  holds: (type: string) => type === "UsageRecorded",
  columns: `parsed."requestId" AS request_id, parsed.account->>'kind' AS account_kind,
    parsed.account->>'id' AS account_id, parsed.model, parsed."startedAt" AS started_at, parsed.tokens,
    parsed."usageSource" AS usage_source, parsed."keyId" AS key_id, parsed."heldWon" AS held_won,
    parsed."pendingWon" AS pending_won, ${occurredAt}`,
  record: `"requestId" text, account json, model text, "startedAt" timestamptz, tokens json, "usageSource" text,
    "keyId" text, "heldWon" numeric, "pendingWon" numeric`,
} as const satisfies ParsedEvents;

export const otherEventRows = {
  table: "parsed_other_events",
  where: `event.type NOT IN ('UsageCharged', 'UsageRecorded')`,
  holds: (type: string) => type !== "UsageCharged" && type !== "UsageRecorded",
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
    parsed."webhookId" AS webhook_id, parsed.url, parsed.events, parsed."holdWon" AS hold_won,
    parsed."releasedWon" AS released_won, parsed."startedAt" AS started_at, event.stream_id,
    event.stream_version, ${occurredAt}`,
  // Each field typed as every kind of event that has one holds it (a kind holding, say, an object where
  // another holds text would fail the cast; the event catalog has none).
  record: `"keyId" text, owner json, "issuedByUserId" text, name text, description text, "keyHash" text,
    "keyPreview" text, status integer, account json, "amountWon" numeric, reference text, model text,
    "inputUsdPerMillionTokens" numeric, "outputUsdPerMillionTokens" numeric,
    "cachedInputUsdPerMillionTokens" numeric, "organizationId" text, rate numeric, "appliesOn" date,
    "rateDate" date, "rateKrwPerUsd" numeric, source text, "userId" text, role text,
    "balanceBelowWon" numeric, "webhookId" text, url text, events json, "holdWon" numeric, "releasedWon" numeric,
    "startedAt" timestamptz`,
} as const satisfies ParsedEvents;

const everyKind: readonly ParsedEvents[] = [usageChargedRows, usageRecordedRows, otherEventRows];

const parsedSelect = (parsed: ParsedEvents) => `
  SELECT event.transaction_order, event.position, ${parsed.columns}
  FROM ledger_events event CROSS JOIN LATERAL json_to_record(event.data) AS parsed(${parsed.record})
  ${parsed.nested ?? ""}`;

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
      `CREATE TEMPORARY TABLE ${parsed.table} ON COMMIT DROP AS ${parsedSelect(parsed)}
       WHERE ${parsed.where}
         AND event.transaction_order > ${chunk.afterOrder} AND event.transaction_order <= ${chunk.upToOrder}`,
    );
    events += created.rowCount ?? 0;
    await client.query(sampledAnalyze(parsed.table));
  }
  sessionsWithBatchTables.delete(client);
  return events;
}

/**
 * A table made by CREATE TABLE AS has no statistics, so the planner guesses a chunk's 400,000 rows at a few
 * thousand and sizes the folds' aggregates and joins for that. A sample of 3,000 rows (a statistics target of
 * 10) costs about 30 ms a table and gives it the counts and distinct values that matter: the folds of a
 * 1,000,000-event rebuild then take seconds less. The target is reset after, so no other ANALYZE in the
 * transaction samples that little.
 */
function sampledAnalyze(table: string): string {
  return `SET LOCAL default_statistics_target = 10; ANALYZE ${table}; RESET default_statistics_target`;
}

export async function dropParsedChunk(client: { query(text: string): Promise<unknown> }): Promise<void> {
  for (const parsed of everyKind) await client.query(`DROP TABLE IF EXISTS ${parsed.table}`);
  sessionsWithBatchTables.delete(client);
}

/**
 * Sessions whose three tables stand for live batches: created once per session and emptied at each commit,
 * for a temporary table created per batch would write the catalog every time. A chunk's parse replaces them
 * with its own, dropped at commit; a rolled-back batch may have taken them along (`forgetBatchTables`).
 */
const sessionsWithBatchTables = new WeakSet<object>();

/** After a failed transaction on `client`: its tables may be gone, the next batch creates them again. */
export function forgetBatchTables(client: object): void {
  sessionsWithBatchTables.delete(client);
}

/**
 * Parses a live batch — the events of `types` after `after`, up to `upTo` — into the three tables, and
 * returns how many events it parsed. `alreadyFilled`: an earlier batch of the same transaction filled them.
 */
export async function parseBatch(
  client: Pick<ClientBase, "query">,
  range: { after: LogPosition; upTo: LogPosition },
  types: readonly string[],
  alreadyFilled: boolean,
): Promise<number> {
  if (!sessionsWithBatchTables.has(client)) {
    for (const parsed of everyKind) {
      await client.query(`DROP TABLE IF EXISTS ${parsed.table}`);
      await client.query(
        `CREATE TEMPORARY TABLE ${parsed.table} ON COMMIT DELETE ROWS AS ${parsedSelect(parsed)} WITH NO DATA`,
      );
    }
    sessionsWithBatchTables.add(client);
  } else if (alreadyFilled) {
    await client.query(everyKind.map((parsed) => `DELETE FROM ${parsed.table}`).join("; "));
  }
  let events = 0;
  for (const parsed of everyKind) {
    if (!types.some((type) => parsed.holds(type))) continue;
    const inserted = await client.query({
      // Named, and its values reach the planner as sub-selects, so that the session keeps its generic plan:
      // given a batch's positions on a log of some thousands of events, PostgreSQL judged a plan for them
      // cheaper than the generic one and planned every parse again. Both are a range scan of the log's index.
      name: `parse-batch-${parsed.table}`,
      text: `INSERT INTO ${parsed.table} ${parsedSelect(parsed)}
             WHERE ${parsed.where} AND event.type = ANY ((SELECT $5::text[])::text[])
               AND (event.transaction_order, event.position) > ((SELECT $1::bigint), (SELECT $2::bigint))
               AND (event.transaction_order, event.position) <= ((SELECT $3::bigint), (SELECT $4::bigint))`,
      values: [
        String(range.after.commit),
        String(range.after.prepare),
        String(range.upTo.commit),
        String(range.upTo.prepare),
        types,
      ],
    });
    events += inserted.rowCount ?? 0;
  }
  return events;
}
