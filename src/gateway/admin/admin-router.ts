import express, { type Router } from "express";
import type pg from "pg";
import type { Clock, ProjectionWaiting } from "../../billing/commands/projection-waiting";
import type { FxRateRefresher } from "../../billing/fx/fx-rate-refresh";
import { billingLimits } from "../../kernel/limits";
import type { EventStore } from "../../ledger/store/event-store";
import { billingErrorMapper } from "../account/billing-error-mapper";
import { addAccountRoutes } from "./account-routes";
import type { AdminContext } from "./admin-context";
import { addBillingRoutes } from "./billing-routes";
import { addEventsRoutes } from "./events-routes";
import { addFxRateRoutes } from "./fx-rate-routes";
import { addLedgerStatusRoutes } from "./ledger-status-routes";
import { addPricingRoutes } from "./pricing-routes";
import { addReadRoutes } from "./read-routes";
import { addStatementRoutes } from "./statement-routes";

/**
 * The admin API (C6) but `POST /sessions`. Mount it at /admin behind `authenticateAdmin`, which this router
 * does not repeat: the service mounts every admin router behind one check.
 */

export interface AdminRouterDependencies {
  store: EventStore;
  database: pg.Pool;
  waiter: ProjectionWaiting;
  fxRateRefresher: FxRateRefresher;
  clock?: Clock;
  /** Hook for `POST /sessions` (C4, C6), owned by whoever holds SessionTokens; mounted first when given. */
  sessionRoutes?: Router;
  projectionWaitTimeoutMs?: number;
  billingHistoryRowsMax?: number;
  /** Absent: checkpoint signatures are reported as not checked. */
  ledgerPublicKey?: Buffer | undefined;
}

export function createAdminRouter(dependencies: AdminRouterDependencies): Router {
  const context: AdminContext = {
    store: dependencies.store,
    database: dependencies.database,
    waiter: dependencies.waiter,
    fxRateRefresher: dependencies.fxRateRefresher,
    clock: dependencies.clock ?? (() => new Date()),
    projectionWaitTimeoutMs:
      dependencies.projectionWaitTimeoutMs ?? billingLimits.adminProjectionWaitTimeoutMs,
    billingHistoryRowsMax: dependencies.billingHistoryRowsMax ?? billingLimits.billingHistoryRowsMax,
    ledgerPublicKey: dependencies.ledgerPublicKey,
  };
  const router = express.Router();
  if (dependencies.sessionRoutes) router.use(dependencies.sessionRoutes);
  addReadRoutes(router, context);
  addAccountRoutes(router, context);
  addPricingRoutes(router, context);
  addFxRateRoutes(router, context);
  addBillingRoutes(router, context);
  addEventsRoutes(router, context);
  addLedgerStatusRoutes(router, context);
  addStatementRoutes(router, context);
  router.use(billingErrorMapper);
  return router;
}
