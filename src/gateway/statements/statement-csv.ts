import type { BillingHistoryEntry } from "../../billing/read-models/billing-history";
import type { MonthlyStatement } from "../../billing/statements/monthly-statement";
import { csvField } from "../admin/billing-csv";

/**
 * A statement as one CSV table (RFC 4180, CRLF), so a spreadsheet or a script reads it without knowing
 * sections: every row says what it is in `section`. The summary rows carry the same decimal strings as the
 * JSON; the charge lines (asked for with `lines=charges`) follow the groups.
 *
 * section,id,date,description,count,amount_won
 */

const lineEnd = "\r\n";

type Cells = readonly [
  section: string,
  id: string,
  date: string,
  description: string,
  count: number | null,
  amountWon: string | null,
];

function row(cells: Cells): string {
  return cells.map((cell) => csvField(cell)).join(",") + lineEnd;
}

const otherMembersKeys = "other members' keys";

export const statementCsvColumns = ["section", "id", "date", "description", "count", "amount_won"] as const;

export function statementCsvHead(statement: MonthlyStatement): string {
  const rows: Cells[] = [
    ["statement", "account", "", `${statement.account.kind}:${statement.account.id}`, null, null],
    ["statement", "month", statement.from, statement.month, null, null],
    ["statement", "provisional", "", String(statement.provisional), null, null],
    [
      "statement",
      "checkpoint",
      statement.checkpoint?.sealedAt ?? "",
      statement.checkpoint === null
        ? "not sealed yet"
        : `#${statement.checkpoint.sequence} ${statement.checkpoint.checkpointHash}`,
      null,
      null,
    ],
    ["summary", "opening_balance", statement.from, "", null, statement.openingBalanceWon],
    ["summary", "top_ups", "", "", statement.topUps.length, statement.topUpsWon],
    ["summary", "charges", "", "", statement.chargeCount, statement.chargesWon],
    ["summary", "corrections", "", "", statement.corrections.length, statement.correctionsWon],
    ["summary", "closing_balance", statement.to, "", null, statement.closingBalanceWon],
    ...statement.topUps.map(
      (topUp): Cells => ["top_up", topUp.eventId, topUp.occurredAt, topUp.reference, null, topUp.amountWon],
    ),
    // A member's view folds other members' requests into one line per list, which names none (C14).
    ...statement.chargesByModel.map(
      (group): Cells => [
        "charges_by_model",
        group.model ?? "",
        "",
        group.model === null ? otherMembersKeys : "",
        group.requests,
        group.amountWon,
      ],
    ),
    ...statement.chargesByKey.map(
      (group): Cells => [
        "charges_by_key",
        group.keyId ?? "",
        "",
        group.keyId === null ? otherMembersKeys : (group.keyName ?? ""),
        group.requests,
        group.amountWon,
      ],
    ),
    ...statement.corrections.map(
      (correction): Cells => [
        "correction",
        correction.requestId ?? "",
        correction.occurredAt ?? "",
        `${correction.model ?? otherMembersKeys}: first charged ${correction.correctedAmountWon}`,
        null,
        correction.amountWon,
      ],
    ),
  ];
  return statementCsvColumns.join(",") + lineEnd + rows.map(row).join("");
}

export function statementCsvChargeLines(entries: readonly BillingHistoryEntry[]): string {
  return entries
    .map((entry) => row(["charge", entry.requestId, entry.startedAt, entry.model, null, entry.amountWon]))
    .join("");
}
