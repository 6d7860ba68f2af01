import type { DeclaredTable } from "../../../database/declared-schema";

/**
 * The request log behind the activity API (src/gateway/activity/): one row per generation request an API
 * key was presented for and recognised — served, refused (a credit, limit or validation refusal), failed
 * (the upstream rejected or failed it) or cut (the client left, or the gateway cut it). Refused and failed
 * requests are not ledger events, so this is a table of its own, written by the gateway off the request path
 * in batches (request-log-writer.ts); an operational record, not a fold of the log: a row lost to a full
 * queue, a database outage or a value its column refuses is counted, never waited for. What a request cost is read from the billing
 * history by request id. Ordered per account, newest first, as the activity pages read it; pruned by start
 * time past its retention. `response_id` is the reply's body id (`chatcmpl-…`, `resp-…`, migration 13), the id
 * an SDK shows: unique per gateway process only, so two rows may share it. `model` is the model requested;
 * `answered_by` the one that answered in its place (a configured fallback, migration 25), which the usage was
 * recorded and charged as; null when the requested model answered, or none did.
 */
export const requestLogTable: DeclaredTable = {
  kind: "table",
  name: "request_log",
  sql: `
    CREATE TABLE request_log (
      request_id text PRIMARY KEY,
      started_at timestamptz NOT NULL,
      account_kind text NOT NULL,
      account_id text NOT NULL,
      key_id uuid NOT NULL,
      key_preview text,
      model text,
      endpoint text NOT NULL,
      streamed boolean,
      http_status smallint NOT NULL,
      outcome text NOT NULL CHECK (outcome IN ('served', 'refused', 'failed', 'cut')),
      latency_ms double precision NOT NULL,
      time_to_first_token_ms double precision,
      input_tokens integer,
      cached_tokens integer,
      output_tokens integer,
      reasoning_tokens integer,
      error_type text,
      response_id text,
      answered_by text
    );
    CREATE INDEX request_log_account_order ON request_log (account_kind, account_id, started_at DESC, request_id DESC);
    CREATE INDEX request_log_started_at ON request_log (started_at);
    CREATE INDEX request_log_response_id ON request_log (response_id) WHERE response_id IS NOT NULL;
  `,
};
