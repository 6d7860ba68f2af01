import type { ProjectionDefinition, TableDefinition } from "../src/ledger/projection/projection";
import { activeKeysProjection } from "./active-keys";
import { alertSettingsProjection } from "./alert-settings";
import { balancesProjection } from "./balances";
import { billingHistoryProjection } from "./billing-history";
import { discountsProjection } from "./discounts";
import { fxRatesProjection } from "./fx-rates";
import { keyListsProjection } from "./key-lists";
import { monthlyStatementsProjection } from "./monthly-statements";
import { organizationMembersProjection } from "./organization-members";
import { organizationRoleClaimsProjection } from "./organization-role-claims";
import { pricesProjection } from "./prices";
import { usageByDayProjection } from "./usage-by-day";

export const allProjections: readonly ProjectionDefinition[] = [
  activeKeysProjection,
  keyListsProjection,
  balancesProjection,
  billingHistoryProjection,
  fxRatesProjection,
  pricesProjection,
  discountsProjection,
  usageByDayProjection,
  monthlyStatementsProjection,
  organizationMembersProjection,
  organizationRoleClaimsProjection,
  alertSettingsProjection,
];

export const allProjectionNames = allProjections.map((projection) => projection.name);

const tableOrder = new Map(
  allProjections.flatMap((projection) => projection.tables).map((table, index) => [table.name, index]),
);

/**
 * Projection tables in the order the projections define them: the order a rebuild swaps them in, and so the
 * one readers that lock several of them keep (src/ledger/projection/projection-snapshot.ts).
 */
export function inProjectionOrder(tables: readonly TableDefinition[]): string[] {
  return tables
    .map((table) => {
      const index = tableOrder.get(table.name);
      if (index === undefined) throw new Error(`${table.name} is no projection's table`);
      return { name: table.name, index };
    })
    .sort((left, right) => left.index - right.index)
    .map((table) => table.name);
}
