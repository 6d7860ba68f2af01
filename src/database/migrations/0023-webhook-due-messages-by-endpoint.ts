import type { Migration } from "../migration";

/**
 * Fair webhook leasing (src/billing/alerts/webhook-outbox.ts, leaseDueMessages) reads the next waiting
 * messages of a few endpoints at a time: an index of pending messages per endpoint in due order, so that read
 * is a probe each, not a walk through an endpoint's delivered history. New index only.
 */
export const webhookDueMessagesByEndpointMigration: Migration = {
  id: 23,
  name: "pending webhook messages by endpoint in due order",
  sql: `
    CREATE INDEX webhook_deliveries_due_by_webhook ON webhook_deliveries (webhook_id, next_attempt_at)
      WHERE status = 'pending';
  `,
};
