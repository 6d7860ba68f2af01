import type pg from "pg";
import { billingHistoryTable } from "../../../projections/billing-history";
import { organizationKeyIssuersTable } from "../../../projections/organization-members";
import { canonicalMoney } from "../../kernel/money";
import {
  accountDigestOf,
  cursorReadFor,
  decodePositionCursor,
  encodePositionCursor,
} from "../../kernel/position-cursor";
import type { AccountReference, UsageTokens } from "../../ledger/events";
import type { GenerationEndpoint, RequestOutcome } from "./request-log-entry";

/**
 * The activity log a page at a time, newest first: the request log's rows of one account (migration 10),
 * each with its cost from the billing history when it was charged. The cursor is opaque to clients: the
 * (start, request id) of the last row served, the order of the index, so a page is one range scan that
 * stops at its limit and pages never skip or repeat a row however rows arrive.
 */

export interface ActivityQuery {
  account: AccountReference;
  from: Date | undefined;
  to: Date | undefined;
  /** The model requested; a request a fallback answered is listed under it, not under the fallback. */
  model: string | undefined;
  /** The fallback that answered in the requested model's place: the requests it answered as that model. */
  answeredBy: string | undefined;
  keyId: string | undefined;
  httpStatus: number | undefined;
  outcome: RequestOutcome | undefined;
  /** A request's `x-request-id`, or its reply's body id (every request of the account that had it). */
  requestId: string | undefined;
  /**
   * Only the requests of the organization keys this user issued: an organization member's own activity,
   * for a role that may not read the other members' (C14).
   */
  issuedByUserId?: string | undefined;
}

export interface ActivityEntry {
  requestId: string;
  startedAt: string;
  /** The model requested. */
  model: string | null;
  /**
   * The model that answered in its place (a configured fallback), which the request was charged as and the
   * billing history names; null when the requested model answered, or none did.
   */
  answeredBy: string | null;
  keyId: string;
  keyPreview: string | null;
  endpoint: GenerationEndpoint;
  streamed: boolean | null;
  httpStatus: number;
  outcome: RequestOutcome;
  latencyMs: number;
  timeToFirstTokenMs: number | null;
  tokens: UsageTokens | null;
  /** Output tokens over the time spent producing them (after the first token, when streamed). */
  outputTokensPerSecond: number | null;
  /** What the request was charged (decimal string); null while not charged, or never. */
  costWon: string | null;
  errorType: string | null;
  /** The reply body's id (`chatcmpl-…`, `resp-…`), what an SDK shows; null when none was made. */
  responseId: string | null;
}

export interface ActivityPage {
  data: ActivityEntry[];
  nextCursor: string | null;
}

export class InvalidActivityCursorError extends Error {
  override readonly name = "InvalidActivityCursorError";
  constructor() {
    super("cursor: must be a nextCursor returned by a previous page");
  }
}

interface Position {
  startedAt: string;
  requestId: string;
}

/**
 * Activity rows are read back with millisecond instants. Read as a position among another account's rows, a
 * cursor would skip some unseen: it must be one of this account's pages.
 */
function decodeCursor(text: string, account: AccountReference): Position {
  const position = decodePositionCursor(text, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  if (!position || !cursorReadFor(position.scope, account)) throw new InvalidActivityCursorError();
  return position;
}

interface ActivityRow {
  request_id: string;
  started_at: Date;
  model: string | null;
  answered_by: string | null;
  key_id: string;
  key_preview: string | null;
  endpoint: GenerationEndpoint;
  streamed: boolean | null;
  http_status: number;
  outcome: RequestOutcome;
  latency_ms: number;
  time_to_first_token_ms: number | null;
  input_tokens: number | null;
  cached_tokens: number | null;
  output_tokens: number | null;
  reasoning_tokens: number | null;
  error_type: string | null;
  cost_won: string | null;
  response_id: string | null;
}

export async function readActivityPage(
  database: Pick<pg.Pool, "query">,
  query: ActivityQuery,
  page: { limit: number; cursor: string | undefined },
): Promise<ActivityPage> {
  const before = page.cursor === undefined ? undefined : decodeCursor(page.cursor, query.account);
  // Unnamed, so planned with its values: the filters not given fold away and the index range is used.
  const result = await database.query<ActivityRow>(
    `SELECT log.request_id, log.started_at, log.model, log.answered_by, log.key_id::text AS key_id,
            log.key_preview, log.endpoint, log.streamed, log.http_status, log.outcome, log.latency_ms,
            log.time_to_first_token_ms, log.input_tokens, log.cached_tokens, log.output_tokens,
            log.reasoning_tokens, log.error_type, charge.amount_won::text AS cost_won, log.response_id
     FROM request_log log
     LEFT JOIN ${billingHistoryTable.name} charge ON charge.request_id = log.request_id
     WHERE log.account_kind = $1 AND log.account_id = $2
       AND ($3::timestamptz IS NULL OR log.started_at >= $3)
       AND ($4::timestamptz IS NULL OR log.started_at < $4)
       AND ($5::text IS NULL OR log.model = $5)
       AND ($6::uuid IS NULL OR log.key_id = $6)
       AND ($7::smallint IS NULL OR log.http_status = $7)
       AND ($8::text IS NULL OR log.outcome = $8)
       AND ($9::timestamptz IS NULL OR (log.started_at, log.request_id) < ($9, $10::text))
       AND ($12::text IS NULL OR log.request_id = $12 OR log.response_id = $12)
       AND ($14::text IS NULL OR log.answered_by = $14)
       AND ($13::text IS NULL OR log.key_id::text IN (
             SELECT issued.key_id FROM ${organizationKeyIssuersTable.name} issued
             WHERE issued.organization_id = $2 AND issued.issued_by_user_id = $13))
     ORDER BY log.started_at DESC, log.request_id DESC
     LIMIT $11`,
    [
      query.account.kind,
      query.account.id,
      query.from?.toISOString() ?? null,
      query.to?.toISOString() ?? null,
      query.model ?? null,
      query.keyId ?? null,
      query.httpStatus ?? null,
      query.outcome ?? null,
      before?.startedAt ?? null,
      before?.requestId ?? null,
      // One more than the page: whether there is a next page, without a count.
      page.limit + 1,
      query.requestId ?? null,
      query.issuedByUserId ?? null,
      query.answeredBy ?? null,
    ],
  );
  const rows = result.rows.slice(0, page.limit);
  const last = rows.at(-1);
  return {
    data: rows.map(activityEntryOf),
    nextCursor:
      result.rows.length > page.limit && last
        ? encodePositionCursor(
            { startedAt: last.started_at.toISOString(), requestId: last.request_id },
            { account: accountDigestOf(query.account) },
          )
        : null,
  };
}

function activityEntryOf(row: ActivityRow): ActivityEntry {
  const tokens =
    row.input_tokens === null || row.output_tokens === null
      ? null
      : {
          input: row.input_tokens,
          cached: row.cached_tokens,
          output: row.output_tokens,
          reasoning: row.reasoning_tokens,
        };
  return {
    requestId: row.request_id,
    startedAt: row.started_at.toISOString(),
    model: row.model,
    answeredBy: row.answered_by,
    keyId: row.key_id,
    keyPreview: row.key_preview,
    endpoint: row.endpoint,
    streamed: row.streamed,
    httpStatus: row.http_status,
    outcome: row.outcome,
    latencyMs: row.latency_ms,
    timeToFirstTokenMs: row.time_to_first_token_ms,
    tokens,
    outputTokensPerSecond: outputTokensPerSecondOf(row),
    costWon: row.cost_won === null ? null : canonicalMoney(row.cost_won),
    errorType: row.error_type,
    responseId: row.response_id,
  };
}

/**
 * Output tokens per second of producing them: for a stream, from its first token to its end (the wait for
 * the first token is its own column); for a JSON reply, over the whole request. One decimal.
 */
export function outputTokensPerSecondOf(row: {
  streamed: boolean | null;
  latency_ms: number;
  time_to_first_token_ms: number | null;
  output_tokens: number | null;
}): number | null {
  if (row.output_tokens === null || row.output_tokens === 0) return null;
  const producingMs =
    row.streamed === true &&
    row.time_to_first_token_ms !== null &&
    row.latency_ms > row.time_to_first_token_ms
      ? row.latency_ms - row.time_to_first_token_ms
      : row.latency_ms;
  if (producingMs <= 0) return null;
  return Math.round((row.output_tokens / (producingMs / 1_000)) * 10) / 10;
}

/** A reply body's id as the formats write it (interface.md): what an SDK shows of a request. */
export function isResponseId(text: string): boolean {
  return /^(chatcmpl|resp)-\d+$/.test(text);
}

/**
 * The requests whose reply carried `responseId`, oldest first: one, or several when gateway processes gave
 * the same id (ids are unique per process only). Rows the log dropped or pruned are not found.
 */
export async function readRequestIdsOfResponse(
  database: Pick<pg.Pool, "query">,
  responseId: string,
  requestsMax: number,
): Promise<string[]> {
  const result = await database.query<{ request_id: string }>(
    `SELECT request_id FROM request_log WHERE response_id = $1 ORDER BY started_at, request_id LIMIT $2`,
    [responseId, requestsMax],
  );
  return result.rows.map((row) => row.request_id);
}
