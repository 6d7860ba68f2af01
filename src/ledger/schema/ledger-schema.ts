import type { DeclaredSchema } from "../../database/declared-schema";
import { ledgerChargeBreakdownFunction } from "./charging/ledger-charge-breakdown";
import { consoleSignInCodesRedeemedTable } from "./gateway/console-sign-in-codes-redeemed";
import { endedSessionsTable } from "./gateway/ended-sessions";
import { requestLogTable } from "./gateway/request-log";
import { gatewayInstancesTable } from "./holds/gateway-instances";
import { holdProgressTable } from "./holds/hold-progress";
import { ledgerAuthorizeUsageFunction } from "./holds/ledger-authorize-usage";
import { ledgerGatewaySessionAliveFunction } from "./holds/ledger-gateway-session-alive";
import { ledgerHoldAuthorizationFunction } from "./holds/ledger-hold-authorization";
import { ledgerHoldSettlementFunction } from "./holds/ledger-hold-settlement";
import { ledgerKeyLimitUsageFunction } from "./holds/ledger-key-limit-usage";
import { requestHoldsTable } from "./holds/request-holds";
import { sweptHoldReservesTable } from "./holds/swept-hold-reserves";
import { accountFundsView } from "./inline-funds/account-funds";
import { accountFundsAuthorizedTable } from "./inline-funds/account-funds-authorized";
import { accountFundsLoggedView } from "./inline-funds/account-funds-logged";
import { accountFundsSettledTable } from "./inline-funds/account-funds-settled";
import { keyLimitsTable } from "./inline-funds/key-limits";
import { keyRequestWindowsTable } from "./inline-funds/key-request-windows";
import { keySpendLoggedView, keySpendView } from "./inline-funds/key-spend";
import { keySpendAuthorizedTable } from "./inline-funds/key-spend-authorized";
import { keySpendSettledTable } from "./inline-funds/key-spend-settled";
import { ledgerAllowedModelsOfFunction } from "./inline-funds/ledger-allowed-models-of";
import { ledgerApplyFundsFunction, ledgerEventsFundsTrigger } from "./inline-funds/ledger-apply-funds";
import { ledgerFoldAccountFundsFunction } from "./inline-funds/ledger-fold-account-funds";
import { ledgerFoldKeyLimitsFunction } from "./inline-funds/ledger-fold-key-limits";
import { ledgerFoldKeyRequestWindowsFunction } from "./inline-funds/ledger-fold-key-request-windows";
import { ledgerFoldKeySpendFunction } from "./inline-funds/ledger-fold-key-spend";
import { ledgerFoldOpenHoldsFunction } from "./inline-funds/ledger-fold-open-holds";
import { ledgerFundsMovedFunction } from "./inline-funds/ledger-funds-moved";
import { ledgerFundsMovementFunction } from "./inline-funds/ledger-funds-movement";
import { ledgerHoldMinuteFunction } from "./inline-funds/ledger-hold-minute";
import { ledgerKeySpendChangeFunction } from "./inline-funds/ledger-key-spend-change";
import { ledgerKeySpendMovementFunction } from "./inline-funds/ledger-key-spend-movement";
import { ledgerRecomputeFundsFunction } from "./inline-funds/ledger-recompute-funds";
import { ledgerSeoulMonthFunction } from "./inline-funds/ledger-seoul-month";
import { openHoldsTable } from "./inline-funds/open-holds";
import { ledgerCheckpointsImmutableTrigger, ledgerCheckpointsTable } from "./ledger-checkpoints";
import { ledgerEventHashFunction } from "./ledger-event-hash";
import { ledgerEventsTable } from "./ledger-events";
import { ledgerEventsChainFunction, ledgerEventsChainTrigger } from "./ledger-events-chain";
import { ledgerEventsImmutableFunction, ledgerEventsImmutableTrigger } from "./ledger-events-immutable";
import { ledgerSettingsTable } from "./ledger-settings";
import { projectionCheckpointsTable } from "./projection-checkpoints";
import { alertBalanceStatesTable } from "./webhooks/alert-balance-states";
import { webhookDeliveriesTable } from "./webhooks/webhook-deliveries";
import { webhookSecretsTable } from "./webhooks/webhook-secrets";

/**
 * Every object of the ledger's database as it stands, one file each in this folder: the log and what guards
 * it, and the read models its append trigger keeps inline (the accounts' funds, open holds, the keys' limits
 * and spend) with the functions that place holds and fold the log, and the function that prices a charge
 * (charging/). Projection tables are not here: each projection declares its own. src/database/migrations.ts
 * brings a database to it.
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
    requestHoldsTable,
    sweptHoldReservesTable,
    keyLimitsTable,
    keySpendSettledTable,
    keySpendAuthorizedTable,
    keyRequestWindowsTable,
    requestLogTable,
    consoleSignInCodesRedeemedTable,
    webhookSecretsTable,
    webhookDeliveriesTable,
    alertBalanceStatesTable,
    endedSessionsTable,
  ],
  objects: [
    ledgerEventsImmutableFunction,
    ledgerEventsImmutableTrigger,
    ledgerCheckpointsImmutableTrigger,
    ledgerEventHashFunction,
    ledgerEventsChainFunction,
    ledgerEventsChainTrigger,
    accountFundsLoggedView,
    accountFundsView,
    keySpendLoggedView,
    keySpendView,
    ledgerSeoulMonthFunction,
    ledgerFundsMovementFunction,
    ledgerFundsMovedFunction,
    ledgerHoldMinuteFunction,
    ledgerKeySpendChangeFunction,
    ledgerKeySpendMovementFunction,
    ledgerAllowedModelsOfFunction,
    ledgerApplyFundsFunction,
    ledgerEventsFundsTrigger,
    ledgerFoldAccountFundsFunction,
    ledgerFoldOpenHoldsFunction,
    ledgerFoldKeySpendFunction,
    ledgerFoldKeyRequestWindowsFunction,
    ledgerFoldKeyLimitsFunction,
    ledgerRecomputeFundsFunction,
    ledgerKeyLimitUsageFunction,
    ledgerAuthorizeUsageFunction,
    ledgerHoldAuthorizationFunction,
    ledgerHoldSettlementFunction,
    ledgerGatewaySessionAliveFunction,
    ledgerChargeBreakdownFunction,
  ],
};
