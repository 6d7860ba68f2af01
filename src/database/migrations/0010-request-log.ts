import type { Migration } from "../migration";

/** The request log behind the activity API, and the console's redeemed sign-in codes (as declared). */
export const requestLogMigration: Migration = {
  id: 10,
  name: "the request log behind the activity API, and the console's redeemed sign-in codes",
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
      error_type text
    );
    CREATE INDEX request_log_account_order ON request_log (account_kind, account_id, started_at DESC, request_id DESC);
    CREATE INDEX request_log_started_at ON request_log (started_at);
  
    CREATE TABLE console_sign_in_codes_redeemed (
      code_id uuid PRIMARY KEY,
      expires_at timestamptz NOT NULL
    );
  `,
};
