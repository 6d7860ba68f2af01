import type { DeclaredTable } from "../../../database/declared-schema";

/**
 * The hold of each request not yet in the log (C10, "where the witness lives"): one row per request, granted
 * by `ledger_authorize_usage` against the account's funds and completed in place by the request's usage or
 * void. The settled-holds log writer (src/billing/holds/settled-holds-log.ts) later appends each settled
 * row's events — its `UsageAuthorized`, its settlement and any correction, the events the log always held —
 * and deletes the row in the same transaction, so a hold's money is always in exactly one place: in this row
 * or in the log's folds. `account_funds` adds the rows to the folds (account-funds.ts).
 *
 * The row keeps its authorization as columns — the `UsageAuthorized` event's id, schema version and data
 * fields, the estimate's as `input_tokens_max`, `output_tokens_max` and `estimated_won` — from which the log
 * writer builds the event (ledger-hold-authorization.ts): a row a fraction of the event's size, which
 * completing it in place writes again. `settlement_event` is the settlement to append (event id, type, schema
 * version, data, metadata) but for what the columns say — the request, its key, account, endpoint and start
 * (hold-row-completion.ts) — which `ledger_hold_settlement` adds back when the log writer appends it, so a
 * retried or crashed writer appends the very same events; jsonb, so the writer reads its fields without
 * parsing the text again for each. `pending_won` is what a
 * settled row costs its account until logged: the recorded usage's exact cost (the gateway's delivered usage
 * when it corrects an orphan estimate), 0 for a void. `placed_at` is the database's clock at the grant (the
 * authorization's `occurredAt`), so a key's requests per minute count it in the same minute before and
 * after it is logged. Operational state like `hold_progress`: not a read model; a rebuild leaves it alone.
 * Pages filled to 15% at insert, so that completing a row in place stays on its page (a heap-only update writes
 * no index entry): the completed version, with its settlement, is about three and a half times the row (861
 * bytes against 237), and must fit beside the old version until the page is pruned (at 50%, three completions in
 * four left their page). A queue table (each request leaves three row versions behind): vacuumed by the processes
 * that remove its rows, every few hundred (src/billing/holds/hold-rows-vacuum.ts), and by autovacuum after every
 * thousand dead rows whatever the table's size; readers reach rows by key, never by a scan of the heap, but for
 * the log writer's poll.
 */
export const requestHoldsTable: DeclaredTable = {
  kind: "table",
  name: "request_holds",
  sql: `
    CREATE TABLE request_holds (
      request_id text PRIMARY KEY,
      account_kind text NOT NULL,
      account_id text NOT NULL,
      key_id uuid NOT NULL,
      month text NOT NULL,
      hold_won numeric NOT NULL CHECK (hold_won >= 0),
      gateway_instance text NOT NULL,
      placed_at timestamptz NOT NULL,
      expires_at timestamptz NOT NULL,
      settlement_event jsonb,
      correction_event json,
      pending_won numeric,
      settled_at timestamptz,
      authorization_event_id uuid NOT NULL,
      authorization_schema_version smallint NOT NULL,
      user_id text,
      organization_id text,
      model text NOT NULL,
      endpoint text NOT NULL,
      streamed boolean NOT NULL,
      started_at timestamptz NOT NULL,
      input_tokens_max bigint NOT NULL,
      output_tokens_max bigint NOT NULL,
      estimated_won numeric NOT NULL,
      CHECK ((settlement_event IS NULL) = (settled_at IS NULL) AND (settled_at IS NULL) = (pending_won IS NULL))
    ) WITH (fillfactor = 15, autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000,
            autovacuum_vacuum_cost_delay = 0);
    CREATE INDEX request_holds_by_account ON request_holds (account_kind, account_id);
  `,
};
