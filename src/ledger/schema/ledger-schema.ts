import type { DeclaredSchema } from "../../database/declared-schema";
import { accountFundsView } from "./account-funds";
import { accountFundsAuthorizedTable } from "./account-funds-authorized";
import { accountFundsSettledTable } from "./account-funds-settled";
import { gatewayInstancesTable } from "./gateway-instances";
import { holdProgressTable } from "./hold-progress";
import { keyLimitsTable } from "./key-limits";
import { keyRequestWindowsTable } from "./key-request-windows";
import { keySpendView } from "./key-spend";
import { keySpendAuthorizedTable } from "./key-spend-authorized";
import { keySpendSettledTable } from "./key-spend-settled";
import { ledgerApplyFundsFunction, ledgerEventsFundsTrigger } from "./ledger-apply-funds";
import { ledgerAuthorizeUsageFunction } from "./ledger-authorize-usage";
import { ledgerCheckpointsImmutableTrigger, ledgerCheckpointsTable } from "./ledger-checkpoints";
import { ledgerEventHashFunction } from "./ledger-event-hash";
import { ledgerEventsTable } from "./ledger-events";
import { ledgerEventsChainFunction, ledgerEventsChainTrigger } from "./ledger-events-chain";
import { ledgerEventsImmutableFunction, ledgerEventsImmutableTrigger } from "./ledger-events-immutable";
import { ledgerFoldAccountFundsFunction } from "./ledger-fold-account-funds";
import { ledgerFoldKeyLimitsFunction } from "./ledger-fold-key-limits";
import { ledgerFoldKeyRequestWindowsFunction } from "./ledger-fold-key-request-windows";
import { ledgerFoldKeySpendFunction } from "./ledger-fold-key-spend";
import { ledgerFoldOpenHoldsFunction } from "./ledger-fold-open-holds";
import { ledgerFundsMovedFunction } from "./ledger-funds-moved";
import { ledgerKeySpendMovementFunction } from "./ledger-key-spend-movement";
import { ledgerRecomputeFundsFunction } from "./ledger-recompute-funds";
import { ledgerSeoulMonthFunction } from "./ledger-seoul-month";
import { ledgerSettingsTable } from "./ledger-settings";
import { openHoldsTable } from "./open-holds";
import { projectionCheckpointsTable } from "./projection-checkpoints";

/**
 * Every object of the ledger's database as it stands, one file each in this folder: the log and what guards
 * it, and the read models its append trigger keeps inline (the accounts' funds, open holds, the keys' limits
 * and spend) with the functions that place holds and fold the log. Projection tables are not here: each
 * projection declares its own. src/database/migrations.ts brings a database to it.
 */
export const ledgerSchema: DeclaredSchema = {
  tables: [
    ledgerEventsTable,
    ledgerSettingsTable,
    projectionCheckpointsTable,
    ledgerCheckpointsTable,
    accountFundsSettledTable,
    accountFundsAuthorizedTable,
    openHoldsTable,
    gatewayInstancesTable,
    holdProgressTable,
    keyLimitsTable,
    keySpendSettledTable,
    keySpendAuthorizedTable,
    keyRequestWindowsTable,
  ],
  objects: [
    ledgerEventsImmutableFunction,
    ledgerEventsImmutableTrigger,
    ledgerCheckpointsImmutableTrigger,
    ledgerEventHashFunction,
    ledgerEventsChainFunction,
    ledgerEventsChainTrigger,
    accountFundsView,
    keySpendView,
    ledgerSeoulMonthFunction,
    ledgerFundsMovedFunction,
    ledgerKeySpendMovementFunction,
    ledgerApplyFundsFunction,
    ledgerEventsFundsTrigger,
    ledgerFoldAccountFundsFunction,
    ledgerFoldOpenHoldsFunction,
    ledgerFoldKeySpendFunction,
    ledgerFoldKeyRequestWindowsFunction,
    ledgerFoldKeyLimitsFunction,
    ledgerRecomputeFundsFunction,
    ledgerAuthorizeUsageFunction,
  ],
};
