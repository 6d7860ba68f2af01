import type { Migration } from "../migration";

export const keyLimitsMigration: Migration = {
  id: 5,
  name: "per-key limits, spend and request windows, checked with the holds",
  sql: `
    CREATE TABLE key_limits (
      key_id uuid PRIMARY KEY,
      monthly_spend_limit_won numeric,
      total_spend_limit_won numeric,
      rate_limit_requests_per_minute integer
    );

    CREATE TABLE key_spend_settled (
      key_id uuid NOT NULL,
      month text NOT NULL,
      held_won numeric NOT NULL DEFAULT 0,
      pending_won numeric NOT NULL DEFAULT 0,
      charged_won numeric NOT NULL DEFAULT 0,
      PRIMARY KEY (key_id, month)
    );

    CREATE TABLE key_spend_authorized (
      key_id uuid NOT NULL,
      month text NOT NULL,
      authorized_won numeric NOT NULL DEFAULT 0,
      PRIMARY KEY (key_id, month)
    );

    CREATE TABLE key_request_windows (
      key_id uuid PRIMARY KEY,
      window_start timestamptz NOT NULL,
      requests integer NOT NULL
    );
  `,
  // Keys of a ledger from before this migration start with their spend folded from the log so far.
  sqlOnceDeclared: "SELECT ledger_recompute_funds()",
};
