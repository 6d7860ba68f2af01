import { Money } from "../src/kernel/money";
import { seoulDateOf } from "../src/kernel/seoul-calendar";
import {
  defineTable,
  type FoldTarget,
  type ProjectionDefinition,
  type ProjectionRows,
} from "../src/ledger/projection/projection";
import { otherEventRows, usageChargedRows } from "../src/ledger/rebuild/parsed-events";
import type { RecordedEvent, RecordedEventOf } from "../src/ledger/store/event-store";

/**
 * What a monthly statement sums, per account and Asia/Seoul month ("YYYY-MM"), so that a statement reads a
 * few rows however many charges the month holds, and its opening balance sums months, not charges.
 *
 * A charge belongs to the month of its request's start (the instant its price and FX rate were taken at,
 * C7), as in the billing history and the usage chart; a top-up to the month it was recorded in. Every
 * month row keeps the log position of the last event it sums: the signed checkpoint covering it seals the
 * statement. A correction's charge (C10) is summed apart from the charges, in the request's month too.
 */

type MonthRow = {
  account_kind: string;
  account_id: string;
  month: string;
  top_ups_won: string;
  charges_won: string;
  corrections_won: string;
  charge_count: string;
  last_transaction_order: string;
  last_position: string;
};

type ChargeGroupRow = {
  account_kind: string;
  account_id: string;
  month: string;
  model: string;
  key_id: string;
  requests: string;
  amount_won: string;
};

type CorrectionRow = {
  corrects_event_id: string;
  request_id: string;
  account_kind: string;
  account_id: string;
  month: string;
  key_id: string;
  model: string;
  occurred_at: string;
  amount_won: string;
  corrected_amount_won: string;
};

type TopUpRow = {
  event_id: string;
  account_kind: string;
  account_id: string;
  month: string;
  occurred_at: string;
  amount_won: string;
  reference: string;
  log_transaction_order: string;
  log_position: string;
};

export const statementMonthsTable = defineTable<MonthRow>({
  name: "projection_statement_months",
  columns: {
    account_kind: "text",
    account_id: "text",
    month: "text",
    top_ups_won: "numeric",
    charges_won: "numeric",
    corrections_won: "numeric",
    charge_count: "bigint",
    last_transaction_order: "bigint",
    last_position: "bigint",
  },
  primaryKey: ["account_kind", "account_id", "month"],
  // The finance export walks the accounts charged in one month.
  indexes: [
    "CREATE INDEX IF NOT EXISTS projection_statement_months_month ON projection_statement_months (month, account_kind, account_id)",
  ],
});

export const statementChargesTable = defineTable<ChargeGroupRow>({
  name: "projection_statement_charges",
  columns: {
    account_kind: "text",
    account_id: "text",
    month: "text",
    model: "text",
    key_id: "text",
    requests: "bigint",
    amount_won: "numeric",
  },
  primaryKey: ["account_kind", "account_id", "month", "model", "key_id"],
});

export const statementTopUpsTable = defineTable<TopUpRow>({
  name: "projection_statement_top_ups",
  columns: {
    event_id: "text",
    account_kind: "text",
    account_id: "text",
    month: "text",
    occurred_at: "timestamptz",
    amount_won: "numeric",
    reference: "text",
    // The log's order, for top-ups recorded in the same millisecond.
    log_transaction_order: "bigint",
    log_position: "bigint",
  },
  primaryKey: ["event_id"],
  writeOnly: true,
  indexes: [
    "CREATE INDEX IF NOT EXISTS projection_statement_top_ups_account_month ON projection_statement_top_ups (account_kind, account_id, month, occurred_at)",
  ],
});

/**
 * Corrections (C10): the charge of a request's delivered usage after the orphan sweep's estimate was charged.
 * Its `amountWon` is the difference it makes (negative when the estimate charged more); it belongs to the
 * request's month, as its first charge does. One row per correction, keyed by the charge it corrects.
 */
export const statementCorrectionsTable = defineTable<CorrectionRow>({
  name: "projection_statement_corrections",
  columns: {
    corrects_event_id: "text",
    request_id: "text",
    account_kind: "text",
    account_id: "text",
    month: "text",
    key_id: "text",
    model: "text",
    occurred_at: "timestamptz",
    amount_won: "numeric",
    corrected_amount_won: "numeric",
  },
  primaryKey: ["corrects_event_id"],
  writeOnly: true,
  indexes: [
    "CREATE INDEX IF NOT EXISTS projection_statement_corrections_account_month ON projection_statement_corrections (account_kind, account_id, month, occurred_at)",
  ],
});

/** "2026-11" for an instant in November 2026, Seoul time. */
export function seoulMonthOf(instant: string): string {
  return seoulDateOf(new Date(instant)).slice(0, "YYYY-MM".length);
}

const seoulMonthSql = (column: string) => `to_char(${column} AT TIME ZONE 'Asia/Seoul', 'YYYY-MM')`;

function isLaterPosition(event: RecordedEvent, row: MonthRow): boolean {
  const order = BigInt(row.last_transaction_order);
  return (
    event.position.commit > order ||
    (event.position.commit === order && event.position.prepare > BigInt(row.last_position))
  );
}

function addToMonth(
  rows: ProjectionRows,
  event: RecordedEvent,
  key: { account_kind: string; account_id: string; month: string },
  change: { topUpWon?: string; chargeWon?: string; correctionWon?: string },
): void {
  const current = rows.get(statementMonthsTable, key) ?? {
    ...key,
    top_ups_won: "0",
    charges_won: "0",
    corrections_won: "0",
    charge_count: "0",
    last_transaction_order: "-1",
    last_position: "-1",
  };
  const later = isLaterPosition(event, current);
  rows.put(statementMonthsTable, {
    ...current,
    top_ups_won: new Money(current.top_ups_won).plus(change.topUpWon ?? "0").toFixed(),
    charges_won: new Money(current.charges_won).plus(change.chargeWon ?? "0").toFixed(),
    corrections_won: new Money(current.corrections_won).plus(change.correctionWon ?? "0").toFixed(),
    charge_count: (BigInt(current.charge_count) + (change.chargeWon === undefined ? 0n : 1n)).toString(),
    last_transaction_order: later ? event.position.commit.toString() : current.last_transaction_order,
    last_position: later ? event.position.prepare.toString() : current.last_position,
  });
}

const tableName: FoldTarget = (table) => table.name;

// The last position of a group: the greatest (transaction order, position) pair, compared as an array.
const monthsUpsert = (into: FoldTarget) => `
       INSERT INTO ${into(statementMonthsTable)} AS stored (account_kind, account_id, month, top_ups_won,
         charges_won, corrections_won, charge_count, last_transaction_order, last_position)
       SELECT account_kind, account_id, month, trim_scale(sum(top_up_won)), trim_scale(sum(charge_won)),
              trim_scale(sum(correction_won)), sum(charges)::bigint,
              (max(ARRAY[transaction_order, position]))[1], (max(ARRAY[transaction_order, position]))[2]
       FROM (SELECT account_kind, account_id, ${seoulMonthSql("occurred_at")} AS month, amount_won AS top_up_won,
                    0 AS charge_won, 0 AS correction_won, 0 AS charges, transaction_order, position
             FROM ${otherEventRows.table} WHERE type = 'CreditToppedUp'
             UNION ALL
             SELECT account_kind, account_id, ${seoulMonthSql("started_at")}, 0, amount_won, 0, 1,
                    transaction_order, position
             FROM ${usageChargedRows.table} WHERE correction IS NULL
             UNION ALL
             SELECT account_kind, account_id, ${seoulMonthSql("started_at")}, 0, 0, amount_won, 0,
                    transaction_order, position
             FROM ${usageChargedRows.table} WHERE correction IS NOT NULL) moved
       GROUP BY account_kind, account_id, month
       ON CONFLICT (account_kind, account_id, month) DO UPDATE SET
         top_ups_won = trim_scale(stored.top_ups_won + excluded.top_ups_won),
         charges_won = trim_scale(stored.charges_won + excluded.charges_won),
         corrections_won = trim_scale(stored.corrections_won + excluded.corrections_won),
         charge_count = stored.charge_count + excluded.charge_count,
         last_transaction_order = CASE WHEN (excluded.last_transaction_order, excluded.last_position)
             > (stored.last_transaction_order, stored.last_position)
           THEN excluded.last_transaction_order ELSE stored.last_transaction_order END,
         last_position = CASE WHEN (excluded.last_transaction_order, excluded.last_position)
             > (stored.last_transaction_order, stored.last_position)
           THEN excluded.last_position ELSE stored.last_position END`;

const statementChargesColumns = "account_kind, account_id, month, model, key_id, requests, amount_won";

const chargeSumsByGroup = `
       SELECT account_kind, account_id, ${seoulMonthSql("started_at")}, model, key_id, count(*),
         trim_scale(sum(amount_won))
       FROM ${usageChargedRows.table} WHERE correction IS NULL
       GROUP BY 1, 2, 3, 4, 5`;

const topUpsInsert = (into: FoldTarget) => `
       INSERT INTO ${into(statementTopUpsTable)} (event_id, account_kind, account_id, month, occurred_at,
         amount_won, reference, log_transaction_order, log_position)
       SELECT event_id, account_kind, account_id, ${seoulMonthSql("occurred_at")}, occurred_at, amount_won,
              reference, transaction_order, position
       FROM ${otherEventRows.table} WHERE type = 'CreditToppedUp'`;

const correctionsInsert = (into: FoldTarget) => `
       INSERT INTO ${into(statementCorrectionsTable)} (corrects_event_id, request_id, account_kind, account_id,
         month, key_id, model, occurred_at, amount_won, corrected_amount_won)
       SELECT correction->>'correctsEventId', request_id, account_kind, account_id, ${seoulMonthSql("started_at")},
              key_id, model, occurred_at, amount_won, (correction->>'correctedAmountWon')::numeric
       FROM ${usageChargedRows.table} WHERE correction IS NOT NULL`;

type Handled = RecordedEventOf<"CreditToppedUp" | "UsageCharged">;

export const monthlyStatementsProjection: ProjectionDefinition = {
  name: "monthly-statements",
  version: 1,
  handles: new Set(["CreditToppedUp", "UsageCharged"]),
  tables: [statementMonthsTable, statementChargesTable, statementTopUpsTable, statementCorrectionsTable],
  evolve(rows, recorded) {
    const event = recorded as Handled & RecordedEvent;
    switch (event.type) {
      case "CreditToppedUp": {
        const key = {
          account_kind: event.data.account.kind,
          account_id: event.data.account.id,
          month: seoulMonthOf(event.metadata.occurredAt),
        };
        addToMonth(rows, event, key, { topUpWon: event.data.amountWon });
        rows.put(statementTopUpsTable, {
          event_id: event.eventId,
          ...key,
          occurred_at: event.metadata.occurredAt,
          amount_won: event.data.amountWon,
          reference: event.data.reference,
          log_transaction_order: event.position.commit.toString(),
          log_position: event.position.prepare.toString(),
        });
        return;
      }
      case "UsageCharged": {
        const key = {
          account_kind: event.data.account.kind,
          account_id: event.data.account.id,
          month: seoulMonthOf(event.data.startedAt),
        };
        const correction = event.data.correction;
        if (correction) {
          addToMonth(rows, event, key, { correctionWon: event.data.amountWon });
          rows.put(statementCorrectionsTable, {
            corrects_event_id: correction.correctsEventId,
            request_id: event.data.requestId,
            ...key,
            key_id: event.data.keyId,
            model: event.data.model,
            occurred_at: event.metadata.occurredAt,
            amount_won: event.data.amountWon,
            corrected_amount_won: correction.correctedAmountWon,
          });
          return;
        }
        addToMonth(rows, event, key, { chargeWon: event.data.amountWon });
        const groupKey = { ...key, model: event.data.model, key_id: event.data.keyId };
        const group = rows.get(statementChargesTable, groupKey) ?? {
          ...groupKey,
          requests: "0",
          amount_won: "0",
        };
        rows.put(statementChargesTable, {
          ...group,
          requests: (BigInt(group.requests) + 1n).toString(),
          amount_won: new Money(group.amount_won).plus(event.data.amountWon).toFixed(),
        });
        return;
      }
      default: {
        const unreachable: never = event;
        throw new Error(`unhandled ${(unreachable as Handled).type}`);
      }
    }
  },
  sqlFold: {
    keyed: [statementMonthsTable],
    // Each chunk's charges summed per group and appended, then regrouped once: a group recurs in most chunks
    // (a month spans them), and an upsert into the keyed shadow cost four times as much.
    statements: (into) => [
      monthsUpsert(into),
      `INSERT INTO ${into(statementChargesTable)} (${statementChargesColumns}) ${chargeSumsByGroup}`,
      topUpsInsert(into),
      correctionsInsert(into),
    ],
    finish: (into) => [
      `CREATE TEMPORARY TABLE rebuild_statement_charges_merged ON COMMIT DROP AS
       SELECT account_kind, account_id, month, model, key_id, sum(requests)::bigint AS requests,
              trim_scale(sum(amount_won)) AS amount_won
       FROM ${into(statementChargesTable)} GROUP BY account_kind, account_id, month, model, key_id`,
      `TRUNCATE ${into(statementChargesTable)}`,
      `INSERT INTO ${into(statementChargesTable)} (${statementChargesColumns})
       SELECT ${statementChargesColumns} FROM rebuild_statement_charges_merged`,
      "DROP TABLE rebuild_statement_charges_merged",
    ],
    // A live batch adds its sums to the group's row.
    batchStatements: [
      monthsUpsert(tableName),
      `INSERT INTO ${statementChargesTable.name} AS stored (${statementChargesColumns}) ${chargeSumsByGroup}
       ON CONFLICT (account_kind, account_id, month, model, key_id) DO UPDATE SET
         requests = stored.requests + excluded.requests,
         amount_won = trim_scale(stored.amount_won + excluded.amount_won)`,
      topUpsInsert(tableName),
      correctionsInsert(tableName),
    ],
  },
};
