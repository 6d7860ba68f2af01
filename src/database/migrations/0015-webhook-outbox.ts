import type { Migration } from "../migration";

/**
 * Alerts by signed webhooks (C14): the endpoints' signing secrets, the delivery outbox and each account's
 * low-funds state, declared in src/ledger/schema/webhooks/. New tables only; nothing is folded again.
 */
export const webhookOutboxMigration: Migration = {
  id: 15,
  name: "webhook secrets, delivery outbox and low-funds states",
  sql: `
    CREATE TABLE webhook_secrets (
      webhook_id text PRIMARY KEY,
      secret text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE TABLE webhook_deliveries (
      delivery_id text PRIMARY KEY,
      webhook_id text NOT NULL,
      event_type text NOT NULL,
      body text NOT NULL,
      dedupe_key text,
      status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed', 'cancelled')),
      attempts integer NOT NULL DEFAULT 0,
      created_at timestamptz NOT NULL DEFAULT now(),
      next_attempt_at timestamptz NOT NULL DEFAULT now(),
      leased_until timestamptz,
      lease_owner text,
      last_response_status integer,
      last_error text,
      delivered_at timestamptz,
      UNIQUE (webhook_id, dedupe_key)
    );
    CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
    CREATE INDEX webhook_deliveries_by_webhook ON webhook_deliveries (webhook_id, created_at);
    CREATE TABLE alert_balance_states (
      account_kind text NOT NULL,
      account_id text NOT NULL,
      below boolean NOT NULL,
      changed_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (account_kind, account_id)
    );
  `,
};
