import type { DeclaredTable } from "../../../database/declared-schema";

/**
 * The webhook outbox: one row per message (`delivery_id` is its `webhook-id`), its body as signed, and where
 * its delivery stands. A worker leases due rows (`leased_until`, `lease_owner`) so two workers never send one
 * row at once; a lease that lapses (its worker died) makes the row due again. Leases are fair per account
 * and endpoint, reading each endpoint's pending rows in due order (`webhook_deliveries_due_by_webhook`).
 * `dedupe_key` makes an alert once per endpoint (a key's limit window, say) whoever notices it.
 */
export const webhookDeliveriesTable: DeclaredTable = {
  kind: "table",
  name: "webhook_deliveries",
  sql: `
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
    CREATE INDEX webhook_deliveries_due_by_webhook ON webhook_deliveries (webhook_id, next_attempt_at)
      WHERE status = 'pending';
    CREATE INDEX webhook_deliveries_by_webhook ON webhook_deliveries (webhook_id, created_at);
  `,
};
