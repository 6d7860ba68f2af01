import { defineTable, type ProjectionDefinition } from "../src/ledger/projection/projection";
import { otherEventRows } from "../src/ledger/rebuild/parsed-events";
import type { RecordedEventOf } from "../src/ledger/store/event-store";

/**
 * Each account's alerts (C14): its low-funds threshold (the last `AlertThresholdSet`; none: no row) and its
 * webhook endpoints (added, not yet removed). The delivery outbox and the signing secrets are not here: they are
 * state outside the log (src/ledger/schema/webhooks/).
 */

type ThresholdRow = { account_kind: string; account_id: string; balance_below_won: string | null };

export const alertThresholdsTable = defineTable<ThresholdRow>({
  name: "projection_alert_thresholds",
  columns: { account_kind: "text", account_id: "text", balance_below_won: "numeric" },
  primaryKey: ["account_kind", "account_id"],
});

type EndpointRow = {
  webhook_id: string;
  account_kind: string;
  account_id: string;
  url: string;
  events: string[];
  created_at: string;
};

export const webhookEndpointsTable = defineTable<EndpointRow>({
  name: "projection_webhook_endpoints",
  columns: {
    webhook_id: "text",
    account_kind: "text",
    account_id: "text",
    url: "text",
    events: "json",
    created_at: "timestamptz",
  },
  primaryKey: ["webhook_id"],
  indexes: [
    "CREATE INDEX IF NOT EXISTS projection_webhook_endpoints_account ON projection_webhook_endpoints (account_kind, account_id)",
  ],
});

type Handled = RecordedEventOf<"AlertThresholdSet" | "WebhookEndpointAdded" | "WebhookEndpointRemoved">;

export const alertSettingsProjection: ProjectionDefinition = {
  name: "alert-settings",
  version: 1,
  handles: new Set(["AlertThresholdSet", "WebhookEndpointAdded", "WebhookEndpointRemoved"]),
  tables: [alertThresholdsTable, webhookEndpointsTable],
  evolve(rows, recorded) {
    const event = recorded as Handled;
    switch (event.type) {
      case "AlertThresholdSet":
        rows.put(alertThresholdsTable, {
          account_kind: event.data.account.kind,
          account_id: event.data.account.id,
          balance_below_won: event.data.balanceBelowWon,
        });
        return;
      case "WebhookEndpointAdded":
        rows.put(webhookEndpointsTable, {
          webhook_id: event.data.webhookId,
          account_kind: event.data.account.kind,
          account_id: event.data.account.id,
          url: event.data.url,
          events: [...event.data.events],
          created_at: event.metadata.occurredAt,
        });
        return;
      case "WebhookEndpointRemoved":
        rows.delete(webhookEndpointsTable, { webhook_id: event.data.webhookId });
        return;
      default: {
        const unreachable: never = event;
        throw new Error(`unhandled ${(unreachable as Handled).type}`);
      }
    }
  },
  // Per chunk: an account's last threshold wins; endpoints added, then those removed (a removal always
  // follows its endpoint's addition in the log) deleted.
  sqlFold: {
    keyed: [alertThresholdsTable, webhookEndpointsTable],
    statements: (into) => [
      `INSERT INTO ${into(alertThresholdsTable)} AS stored (account_kind, account_id, balance_below_won)
       SELECT DISTINCT ON (account_kind, account_id) account_kind, account_id, balance_below_won
       FROM ${otherEventRows.table} WHERE type = 'AlertThresholdSet'
       ORDER BY account_kind, account_id, transaction_order DESC, position DESC
       ON CONFLICT (account_kind, account_id) DO UPDATE SET balance_below_won = excluded.balance_below_won`,
      `INSERT INTO ${into(webhookEndpointsTable)} (webhook_id, account_kind, account_id, url, events, created_at)
       SELECT webhook_id, account_kind, account_id, url, events, occurred_at
       FROM ${otherEventRows.table} WHERE type = 'WebhookEndpointAdded'
       ON CONFLICT (webhook_id) DO NOTHING`,
      `DELETE FROM ${into(webhookEndpointsTable)} stored USING ${otherEventRows.table} removed
       WHERE removed.type = 'WebhookEndpointRemoved' AND removed.webhook_id = stored.webhook_id`,
    ],
  },
};
