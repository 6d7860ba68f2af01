import type pg from "pg";
import { organizationKeyIssuersTable } from "../../../projections/organization-members";
import { formatMoney, parseMoney, sumMoney } from "../../kernel/money";
import {
  assertStatementAddsUp,
  type MonthlyStatement,
  type StatementChargeCell,
  type StatementChargeGroup,
} from "./monthly-statement";

/**
 * An organization's statement as a member reads it (C14): its totals are the organization's, open to each
 * member, but only owners and admins read other members' activity. So the lines of the keys other members
 * issued fold into one line per list — `model` null in `chargesByModel`, `keyId` null in `chargesByKey`;
 * `requestId`, `keyId`, `model` and `occurredAt` null in `corrections` — naming no key, request or model of
 * theirs; every list still adds up to its total. `chargeGroups` are the statement's model × key groups, read
 * in its snapshot (readMonthlyStatementWithGroups).
 */
export async function statementSeenByMember(
  database: Pick<pg.ClientBase, "query">,
  statement: MonthlyStatement,
  chargeGroups: readonly StatementChargeCell[],
  userId: string,
): Promise<MonthlyStatement> {
  const own = await keysIssuedBy(database, statement.account.id, userId, [
    ...statement.chargesByKey.flatMap((line) => (line.keyId === null ? [] : [line.keyId])),
    ...statement.corrections.flatMap((line) => (line.keyId === null ? [] : [line.keyId])),
  ]);
  const isOwn = (keyId: string | null) => keyId !== null && own.has(keyId);
  const othersCharges = statement.chargesByKey.filter((line) => !isOwn(line.keyId));
  const othersCorrections = statement.corrections.filter((line) => !isOwn(line.keyId));
  const sum = (amounts: readonly string[]) =>
    formatMoney(sumMoney(amounts.map((amount) => parseMoney(amount))));
  const ownByModel = new Map<string, StatementChargeCell[]>();
  for (const group of chargeGroups.filter((cell) => isOwn(cell.keyId)))
    ownByModel.set(group.model, [...(ownByModel.get(group.model) ?? []), group]);
  const othersByModel = chargeGroups.filter((cell) => !isOwn(cell.keyId));
  const together = (groups: readonly StatementChargeGroup[]): StatementChargeGroup => ({
    requests: groups.reduce((count, group) => count + group.requests, 0),
    amountWon: sum(groups.map((group) => group.amountWon)),
  });
  const seen: MonthlyStatement = {
    ...statement,
    chargesByModel: [
      ...[...ownByModel]
        .sort(([left], [right]) => (left < right ? -1 : left > right ? 1 : 0))
        .map(([model, groups]) => ({ model, ...together(groups) })),
      ...(othersByModel.length === 0 ? [] : [{ model: null, ...together(othersByModel) }]),
    ],
    chargesByKey: [
      ...statement.chargesByKey.filter((line) => isOwn(line.keyId)),
      ...(othersCharges.length === 0
        ? []
        : [
            {
              keyId: null,
              keyName: null,
              requests: othersCharges.reduce((count, line) => count + line.requests, 0),
              amountWon: sum(othersCharges.map((line) => line.amountWon)),
            },
          ]),
    ],
    corrections: [
      ...statement.corrections.filter((line) => isOwn(line.keyId)),
      ...(othersCorrections.length === 0
        ? []
        : [
            {
              requestId: null,
              keyId: null,
              keyName: null,
              model: null,
              occurredAt: null,
              amountWon: sum(othersCorrections.map((line) => line.amountWon)),
              correctedAmountWon: sum(othersCorrections.map((line) => line.correctedAmountWon)),
            },
          ]),
    ],
  };
  // Folding moves no money: every list still sums to its total.
  assertStatementAddsUp(seen);
  return seen;
}

/** Of `keyIds`, those `userId` issued for the organization. */
async function keysIssuedBy(
  database: Pick<pg.ClientBase, "query">,
  organizationId: string,
  userId: string,
  keyIds: readonly string[],
): Promise<Set<string>> {
  if (keyIds.length === 0) return new Set();
  const issued = await database.query<{ key_id: string }>(
    `SELECT key_id FROM ${organizationKeyIssuersTable.name}
     WHERE organization_id = $1 AND issued_by_user_id = $2 AND key_id = ANY($3::text[])`,
    [organizationId, userId, [...new Set(keyIds)]],
  );
  return new Set(issued.rows.map((row) => row.key_id));
}
