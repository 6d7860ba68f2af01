import { Money } from "../src/kernel/money";
import {
  defineTable,
  type ProjectionDefinition,
  type ProjectionRows,
} from "../src/ledger/projection/projection";
import { otherEventRows, usageChargedRows, usageRecordedRows } from "../src/ledger/rebuild/parsed-events";
import type { RecordedEventOf } from "../src/ledger/store/event-store";

/**
 * Balances per account, and the usage recorded but not charged yet (pending charges). A balance may go
 * below zero: the usage already happened; the next request is then refused.
 */

type BalanceRow = {
  account_kind: string;
  account_id: string;
  balance_won: string;
  topped_up_won: string;
  charged_won: string;
};

type PendingRow = {
  request_id: string;
  account_kind: string;
  account_id: string;
  model: string;
  started_at: string;
  recorded_at: string;
  usage: Record<string, unknown>;
};

export const balancesTable = defineTable<BalanceRow>({
  name: "projection_balances",
  columns: {
    account_kind: "text",
    account_id: "text",
    balance_won: "numeric",
    topped_up_won: "numeric",
    charged_won: "numeric",
  },
  primaryKey: ["account_kind", "account_id"],
});

export const pendingChargesTable = defineTable<PendingRow>({
  name: "projection_pending_charges",
  columns: {
    request_id: "text",
    account_kind: "text",
    account_id: "text",
    model: "text",
    started_at: "timestamptz",
    recorded_at: "timestamptz",
    usage: "json",
  },
  primaryKey: ["request_id"],
  writeOnly: true,
  indexes: [
    "CREATE INDEX IF NOT EXISTS projection_pending_charges_account ON projection_pending_charges (account_kind, account_id)",
    "CREATE INDEX IF NOT EXISTS projection_pending_charges_age ON projection_pending_charges (recorded_at)",
  ],
});

type Handled = RecordedEventOf<"CreditToppedUp" | "UsageRecorded" | "UsageCharged">;

function adjustBalance(
  rows: ProjectionRows,
  account: { kind: string; id: string },
  change: { toppedUpWon?: string; chargedWon?: string },
): void {
  const current = rows.get(balancesTable, { account_kind: account.kind, account_id: account.id }) ?? {
    account_kind: account.kind,
    account_id: account.id,
    balance_won: "0",
    topped_up_won: "0",
    charged_won: "0",
  };
  const toppedUp = new Money(current.topped_up_won).plus(change.toppedUpWon ?? "0");
  const charged = new Money(current.charged_won).plus(change.chargedWon ?? "0");
  rows.put(balancesTable, {
    ...current,
    topped_up_won: toppedUp.toFixed(),
    charged_won: charged.toFixed(),
    balance_won: toppedUp.minus(charged).toFixed(),
  });
}

export const balancesProjection: ProjectionDefinition = {
  name: "balances",
  version: 1,
  handles: new Set(["CreditToppedUp", "UsageRecorded", "UsageCharged"]),
  tables: [balancesTable, pendingChargesTable],
  evolve(rows, recorded) {
    const event = recorded as Handled;
    switch (event.type) {
      case "CreditToppedUp":
        adjustBalance(rows, event.data.account, { toppedUpWon: event.data.amountWon });
        return;
      case "UsageRecorded":
        rows.put(pendingChargesTable, {
          request_id: event.data.requestId,
          account_kind: event.data.account.kind,
          account_id: event.data.account.id,
          model: event.data.model,
          started_at: event.data.startedAt,
          recorded_at: event.metadata.occurredAt,
          usage: { tokens: event.data.tokens, usageSource: event.data.usageSource },
        });
        return;
      case "UsageCharged":
        adjustBalance(rows, event.data.account, { chargedWon: event.data.amountWon });
        rows.delete(pendingChargesTable, { request_id: event.data.requestId });
        return;
      default: {
        const unreachable: never = event;
        throw new Error(`unhandled ${(unreachable as Handled).type}`);
      }
    }
  },
  sqlFold: {
    keyed: [balancesTable, pendingChargesTable],
    statements: (into) => [
      `INSERT INTO ${into(balancesTable)} AS stored (account_kind, account_id, topped_up_won, charged_won,
         balance_won)
       SELECT account_kind, account_id, trim_scale(sum(topped_up_won)), trim_scale(sum(charged_won)),
              trim_scale(sum(topped_up_won) - sum(charged_won))
       FROM (SELECT account_kind, account_id, amount_won AS topped_up_won, 0 AS charged_won
             FROM ${otherEventRows.table} WHERE type = 'CreditToppedUp'
             UNION ALL
             SELECT account_kind, account_id, 0, amount_won FROM ${usageChargedRows.table}) moved
       GROUP BY account_kind, account_id
       ON CONFLICT (account_kind, account_id) DO UPDATE SET
         topped_up_won = trim_scale(stored.topped_up_won + excluded.topped_up_won),
         charged_won = trim_scale(stored.charged_won + excluded.charged_won),
         balance_won = trim_scale(stored.topped_up_won + excluded.topped_up_won
                                  - stored.charged_won - excluded.charged_won)`,
      // Usage recorded in this chunk and not charged after it in this chunk is pending (the latest record
      // of a request wins, as put replaces a row)…
      `INSERT INTO ${into(pendingChargesTable)} AS stored (request_id, account_kind, account_id, model,
         started_at, recorded_at, usage)
       SELECT DISTINCT ON (recorded.request_id) recorded.request_id, recorded.account_kind, recorded.account_id,
              recorded.model, recorded.started_at, recorded.occurred_at,
              json_build_object('tokens', recorded.tokens, 'usageSource', recorded.usage_source)
       FROM ${usageRecordedRows.table} recorded
       WHERE NOT EXISTS (
         SELECT 1 FROM ${usageChargedRows.table} charged
         WHERE charged.request_id = recorded.request_id
           AND (charged.transaction_order, charged.position) > (recorded.transaction_order, recorded.position))
       ORDER BY recorded.request_id, recorded.transaction_order DESC, recorded.position DESC
       ON CONFLICT (request_id) DO UPDATE SET account_kind = excluded.account_kind,
         account_id = excluded.account_id, model = excluded.model, started_at = excluded.started_at,
         recorded_at = excluded.recorded_at, usage = excluded.usage`,
      // …and usage recorded in earlier chunks stops being pending when charged here (unless recorded again).
      `DELETE FROM ${into(pendingChargesTable)} stored USING ${usageChargedRows.table} charged
       WHERE stored.request_id = charged.request_id
         AND NOT EXISTS (
           SELECT 1 FROM ${usageRecordedRows.table} recorded
           WHERE recorded.request_id = charged.request_id
             AND (recorded.transaction_order, recorded.position) > (charged.transaction_order, charged.position))`,
    ],
  },
};
