import type { ProjectionDefinition } from "../src/ledger/projection/projection";
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
