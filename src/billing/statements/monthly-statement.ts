import type pg from "pg";
import { inProjectionOrder } from "../../../projections";
import { pendingChargesTable } from "../../../projections/balances";
import { keyNamesTable } from "../../../projections/key-lists";
import {
  statementChargesTable,
  statementCorrectionsTable,
  statementMonthsTable,
  statementTopUpsTable,
} from "../../../projections/monthly-statements";
import { statementLimits } from "../../kernel/limits";
import { formatMoney, Money, parseMoney, sumMoney } from "../../kernel/money";
import type { AccountReference } from "../../ledger/events";
import { describeCheckpoint } from "../../ledger/integrity/event-proof";
import { checkpointCovering } from "../../ledger/integrity/ledger-checkpoint";
import { lockTablesBeforeSnapshot } from "../../ledger/projection/projection-snapshot";
import { readKeyNames } from "../read-models/key-names";
import { boundsOf, type StatementMonth } from "./statement-month";
import { isMonthProvisional } from "./unsettled-usage";

/**
 * The monthly statement of one account: what finance closes a month with. Read from the monthly-statements
 * projection in one snapshot, so a month with 100,000 charges costs a few rows; the opening balance sums the
 * earlier months' rows, never their charges.
 *
 * Sign convention: `chargesWon` and `correctionsWon` are what the account was charged (a negative
 * correction gave money back); `closing = opening + topUps − charges − corrections`, exactly, in micro-won.
 * The identity, and that every line sums to its total, is checked each time a statement is made; a
 * statement that fails it is never answered (StatementIdentityError).
 */

export const statementSignConvention =
  "closingBalanceWon = openingBalanceWon + topUpsWon - chargesWon - correctionsWon; charges and corrections are what the account paid (a negative correction was paid back)";

export interface StatementTopUp {
  eventId: string;
  occurredAt: string;
  amountWon: string;
  reference: string;
}

/** A request's late settlement (C10): what it added to the request's first charge, and that charge. */
export interface StatementCorrection {
  requestId: string;
  keyId: string;
  /** The key's name, kept after it is deleted; null for a key the ledger never issued. */
  keyName: string | null;
  model: string;
  occurredAt: string;
  amountWon: string;
  correctedAmountWon: string;
}

/** The corrections of the organization's other members together, in a member's view (C14): nothing named. */
export type OtherMembersCorrections = Record<
  "requestId" | "keyId" | "keyName" | "model" | "occurredAt",
  null
> &
  Pick<StatementCorrection, "amountWon" | "correctedAmountWon">;

export interface StatementChargeGroup {
  requests: number;
  amountWon: string;
}

export interface MonthlyStatement {
  account: AccountReference;
  month: StatementMonth;
  /** The month as instants: [from, to). */
  from: string;
  to: string;
  currency: "KRW";
  openingBalanceWon: string;
  topUpsWon: string;
  chargesWon: string;
  correctionsWon: string;
  closingBalanceWon: string;
  signConvention: string;
  chargeCount: number;
  /** The month may still change: it has not ended (with its settlement grace) or has usage not charged yet. */
  provisional: boolean;
  /** The signed checkpoint that seals every event this statement sums; null until one does. */
  checkpoint: ReturnType<typeof describeCheckpoint> | null;
  topUps: StatementTopUp[];
  /** Per model; a null model: the requests of the organization's other members, together (a member's view, C14). */
  chargesByModel: (StatementChargeGroup & { model: string | null })[];
  /** Per key; a null key: the keys of the organization's other members, together (a member's view, C14). */
  chargesByKey: (StatementChargeGroup & { keyId: string | null; keyName: string | null })[];
  corrections: (StatementCorrection | OtherMembersCorrections)[];
  generatedAt: string;
}

/** A statement whose lines or balances do not add up: the projection is damaged; never shown as if true. */
export class StatementIdentityError extends Error {
  override readonly name = "StatementIdentityError";
}

/** More lines than one statement lists. */
export class StatementTooLargeError extends Error {
  override readonly name = "StatementTooLargeError";
}

type Queryable = Pick<pg.ClientBase, "query">;

/** Every amount of a statement in the API's one money form (docs/api.md), as the balance API gives it. */
const won = (amount: Money) => formatMoney(amount);

export async function readMonthlyStatement(
  database: Pick<pg.Pool, "connect">,
  account: AccountReference,
  month: StatementMonth,
  now: Date,
): Promise<MonthlyStatement> {
  return (await readMonthlyStatementWithGroups(database, account, month, now)).statement;
}

/** One model's charges on one key in the month: what `chargesByModel` and `chargesByKey` each sum. */
export interface StatementChargeCell extends StatementChargeGroup {
  model: string;
  keyId: string;
}

/**
 * The projection tables a statement reads: locked before its snapshot, so a refold (a definition's version
 * bumped, `ledger rebuild`) never shows them empty to it.
 */
const statementTables = inProjectionOrder([
  statementMonthsTable,
  statementTopUpsTable,
  statementChargesTable,
  statementCorrectionsTable,
  keyNamesTable,
  pendingChargesTable,
]);

/**
 * The statement, and the model × key groups its two lists sum, read in the statement's snapshot: what a
 * member's view (statement-seen-by-member.ts) folds by whose key each group is.
 */
export async function readMonthlyStatementWithGroups(
  database: Pick<pg.Pool, "connect">,
  account: AccountReference,
  month: StatementMonth,
  now: Date,
): Promise<{ statement: MonthlyStatement; chargeGroups: StatementChargeCell[] }> {
  const client = await database.connect();
  try {
    // One snapshot: the projection commits each batch's rows together, so the totals and lines agree.
    await client.query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
    await lockTablesBeforeSnapshot(client, statementTables);
    const statement = await readInSnapshot(client, account, month, now);
    await client.query("COMMIT");
    return statement;
  } catch (error) {
    await client.query("ROLLBACK").catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}

interface BalancesRow {
  opening_won: string;
  closing_won: string;
  top_ups_won: string | null;
  charges_won: string | null;
  corrections_won: string | null;
  charge_count: string | null;
  last_transaction_order: string | null;
  last_position: string | null;
}

async function readInSnapshot(
  client: Queryable,
  account: AccountReference,
  month: StatementMonth,
  now: Date,
): Promise<{ statement: MonthlyStatement; chargeGroups: StatementChargeCell[] }> {
  const { start, end } = boundsOf(month);
  const key: StatementKey = [account.kind, account.id, month];
  const totals = await readBalances(client, key);
  const { topUps, groups, corrections } = await readLines(client, key);
  const provisional = await isMonthProvisional(client, month, now, account);
  const keyNames = await readKeyNames(client, [
    ...groups.map((row) => row.key_id),
    ...corrections.map((row) => row.keyId),
  ]);
  const keyNameOf = (keyId: string) => keyNames.get(keyId) ?? null;
  const statement: MonthlyStatement = {
    account,
    month,
    from: start.toISOString(),
    to: end.toISOString(),
    currency: "KRW",
    openingBalanceWon: won(parseMoney(totals.opening_won)),
    topUpsWon: won(new Money(totals.top_ups_won ?? "0")),
    chargesWon: won(new Money(totals.charges_won ?? "0")),
    correctionsWon: won(new Money(totals.corrections_won ?? "0")),
    closingBalanceWon: won(parseMoney(totals.closing_won)),
    signConvention: statementSignConvention,
    chargeCount: Number(totals.charge_count ?? "0"),
    provisional,
    checkpoint: await checkpointSealing(client, totals),
    topUps: topUps.map((row) => ({ ...row, amountWon: won(parseMoney(row.amountWon)) })),
    chargesByModel: groupBy(groups, (row) => row.model).map(([model, group]) => ({ model, ...group })),
    chargesByKey: groupBy(groups, (row) => row.key_id).map(([keyId, group]) => ({
      keyId,
      keyName: keyNameOf(keyId),
      ...group,
    })),
    corrections: corrections.map((row) => ({
      ...row,
      keyName: keyNameOf(row.keyId),
      amountWon: won(parseMoney(row.amountWon)),
      correctedAmountWon: won(parseMoney(row.correctedAmountWon)),
    })),
    generatedAt: now.toISOString(),
  };
  assertStatementAddsUp(statement);
  const chargeGroups = groups.map((row) => ({
    model: row.model,
    keyId: row.key_id,
    requests: Number(row.requests),
    amountWon: won(parseMoney(row.amount_won)),
  }));
  return { statement, chargeGroups };
}

/** The statement's account and month, as the first three query parameters. */
type StatementKey = [kind: AccountReference["kind"], id: string, month: StatementMonth];

/** The month's totals and the balances around it, with the last position they include. */
async function readBalances(client: Queryable, key: StatementKey): Promise<BalancesRow> {
  // Opening and closing are summed separately from the month's own row, so assertStatementAddsUp is a check.
  const balances = await client.query<BalancesRow>(
    `SELECT coalesce(sum(top_ups_won - charges_won - corrections_won) FILTER (WHERE month < $3), 0)::text
              AS opening_won,
            coalesce(sum(top_ups_won - charges_won - corrections_won), 0)::text AS closing_won,
            (sum(top_ups_won) FILTER (WHERE month = $3))::text AS top_ups_won,
            (sum(charges_won) FILTER (WHERE month = $3))::text AS charges_won,
            (sum(corrections_won) FILTER (WHERE month = $3))::text AS corrections_won,
            (sum(charge_count) FILTER (WHERE month = $3))::text AS charge_count,
            (max(ARRAY[last_transaction_order, last_position]))[1]::text AS last_transaction_order,
            (max(ARRAY[last_transaction_order, last_position]))[2]::text AS last_position
     FROM ${statementMonthsTable.name}
     WHERE account_kind = $1 AND account_id = $2 AND month <= $3`,
    key,
  );
  return balances.rows[0]!;
}

interface ChargeGroupRow {
  model: string;
  key_id: string;
  requests: string;
  amount_won: string;
}

/** The month's top-ups, charge groups and corrections; refused when any holds more than a statement lists. */
async function readLines(client: Queryable, key: StatementKey) {
  const topUps = await client.query<StatementTopUp>(
    `SELECT event_id AS "eventId",
            to_char(occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS "occurredAt",
            amount_won::text AS "amountWon", reference
     FROM ${statementTopUpsTable.name}
     WHERE account_kind = $1 AND account_id = $2 AND month = $3
     ORDER BY occurred_at, log_transaction_order, log_position LIMIT $4`,
    [...key, statementLimits.linesMax + 1],
  );
  const groups = await client.query<ChargeGroupRow>(
    `SELECT model, key_id, requests::text AS requests, amount_won::text AS amount_won
     FROM ${statementChargesTable.name}
     WHERE account_kind = $1 AND account_id = $2 AND month = $3
     ORDER BY model, key_id LIMIT $4`,
    [...key, statementLimits.linesMax + 1],
  );
  const corrections = await client.query<Omit<StatementCorrection, "keyName">>(
    `SELECT request_id AS "requestId", key_id AS "keyId", model,
            to_char(occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS "occurredAt",
            amount_won::text AS "amountWon", corrected_amount_won::text AS "correctedAmountWon"
     FROM ${statementCorrectionsTable.name}
     WHERE account_kind = $1 AND account_id = $2 AND month = $3
     ORDER BY occurred_at, request_id LIMIT $4`,
    [...key, statementLimits.linesMax + 1],
  );
  if (
    topUps.rows.length > statementLimits.linesMax ||
    groups.rows.length > statementLimits.linesMax ||
    corrections.rows.length > statementLimits.linesMax
  )
    throw new StatementTooLargeError(
      `the month holds more than ${statementLimits.linesMax} top-ups, corrections or model × key groups`,
    );
  return { topUps: topUps.rows, groups: groups.rows, corrections: corrections.rows };
}

/** The signed checkpoint covering the last event the totals include; null when none does yet. */
async function checkpointSealing(
  client: Queryable,
  totals: BalancesRow,
): Promise<MonthlyStatement["checkpoint"]> {
  if (totals.last_transaction_order === null || totals.last_position === null) return null;
  const lastPosition = {
    commit: BigInt(totals.last_transaction_order),
    prepare: BigInt(totals.last_position),
  };
  const covering = await checkpointCovering(client, lastPosition);
  return covering ? describeCheckpoint(covering.checkpoint) : null;
}

function groupBy<Row extends { requests: string; amount_won: string }>(
  rows: readonly Row[],
  keyOf: (row: Row) => string,
): [string, StatementChargeGroup][] {
  const groups = new Map<string, { requests: number; amount: Money }>();
  for (const row of rows) {
    const group = groups.get(keyOf(row)) ?? { requests: 0, amount: new Money(0) };
    group.requests += Number(row.requests);
    group.amount = group.amount.plus(row.amount_won);
    groups.set(keyOf(row), group);
  }
  return [...groups]
    .sort(([left], [right]) => (left < right ? -1 : left > right ? 1 : 0))
    .map(([key, group]) => [key, { requests: group.requests, amountWon: won(group.amount) }]);
}

/** The identity and every line total, exact in micro-won (amounts are whole micro-won by C7). */
export function assertStatementAddsUp(statement: MonthlyStatement): void {
  const amount = (text: string) => parseMoney(text);
  const expectedClosing = amount(statement.openingBalanceWon)
    .plus(amount(statement.topUpsWon))
    .minus(amount(statement.chargesWon))
    .minus(amount(statement.correctionsWon));
  const failures: string[] = [];
  if (!expectedClosing.equals(amount(statement.closingBalanceWon)))
    failures.push(
      `opening ${statement.openingBalanceWon} + top-ups ${statement.topUpsWon} - charges ${statement.chargesWon} - corrections ${statement.correctionsWon} is ${won(expectedClosing)}, not the closing ${statement.closingBalanceWon}`,
    );
  const lineSums: [string, Money, string][] = [
    ["top-ups", sumMoney(statement.topUps.map((line) => amount(line.amountWon))), statement.topUpsWon],
    [
      "charges by model",
      sumMoney(statement.chargesByModel.map((line) => amount(line.amountWon))),
      statement.chargesWon,
    ],
    [
      "charges by key",
      sumMoney(statement.chargesByKey.map((line) => amount(line.amountWon))),
      statement.chargesWon,
    ],
    [
      "corrections",
      sumMoney(statement.corrections.map((line) => amount(line.amountWon))),
      statement.correctionsWon,
    ],
  ];
  for (const [name, sum, total] of lineSums)
    if (!sum.equals(amount(total))) failures.push(`${name} sum to ${won(sum)}, not ${total}`);
  const requests = statement.chargesByModel.reduce((count, line) => count + line.requests, 0);
  if (requests !== statement.chargeCount)
    failures.push(`charges by model count ${requests} requests, not ${statement.chargeCount}`);
  if (failures.length > 0)
    throw new StatementIdentityError(
      `statement of ${statement.account.kind} ${statement.account.id} for ${statement.month} does not add up: ${failures.join("; ")}`,
    );
}
