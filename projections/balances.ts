import { Money } from "../src/billing/money";
import type { RecordedEventOf } from "../src/ledger/event-store";
import { defineTable, type ProjectionDefinition, type ProjectionRows } from "../src/ledger/projection";

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
};
