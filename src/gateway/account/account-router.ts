import express, { type Router } from "express";
import type pg from "pg";
import { z } from "zod";
import { readBalanceWon, readFundsInFlight } from "../../billing/read-models/account-balances";
import { countBillingHistory, readBillingHistory } from "../../billing/read-models/billing-history";
import { readBillingPage, readBillingTotals } from "../../billing/read-models/billing-pages";
import { billingLimits, readLimits } from "../../kernel/limits";
import type { AccountReference } from "../../ledger/events";
import { apiErrors, validationErrorOf } from "../api-error";
import { sessionOf } from "../middleware/authenticate-session";
import { billingErrorMapper } from "./billing-error-mapper";
import { billingRangeOf } from "./billing-range";
import { billingPageQuerySchema, billingTotalsQuerySchema, isPageQuery } from "./billing-read-schemas";
import { sendBillingJson } from "./billing-response";
import { addSessionStatementRoutes } from "./statement-routes";

/**
 * The session's own finance (C4): `GET /balance` (each account's `balanceWon`, and `heldWon` / `pendingWon`:
 * what requests in flight hold and what is recorded but not charged yet) and `GET /billing`. Mounted under /llm behind
 * `authenticateSession` (the caller's router does it, as for the key routes).
 */

export interface AccountRouterDependencies {
  database: Pick<pg.Pool, "query" | "connect">;
  billingHistoryRowsMax?: number;
}

const billingQuerySchema = z.object({
  isOrganization: z.enum(["true", "false"], { error: "must be true or false" }).optional(),
});

export function createAccountRouter(dependencies: AccountRouterDependencies): Router {
  const router = express.Router();
  const rowsMax = dependencies.billingHistoryRowsMax ?? billingLimits.billingHistoryRowsMax;

  router.get("/balance", async (_request, response) => {
    const session = sessionOf(response.locals);
    const fundsOf = async (account: AccountReference) => ({
      id: account.id,
      balanceWon: await readBalanceWon(dependencies.database, account),
      ...(await readFundsInFlight(dependencies.database, account)),
    });
    const organizationId = session.organizationId;
    response.json({
      user: await fundsOf({ kind: "user", id: session.userId }),
      organization:
        organizationId === null ? null : await fundsOf({ kind: "organization", id: organizationId }),
    });
  });

  /** The session's own account, or its organization's with `isOrganization=true`. */
  const billingAccountOf = (request: { query: unknown }, locals: Record<string, unknown>) => {
    const session = sessionOf(locals);
    const parsed = billingQuerySchema.safeParse(request.query);
    if (!parsed.success) throw validationErrorOf(parsed.error);
    if (parsed.data.isOrganization !== "true")
      return { kind: "user", id: session.userId } as AccountReference;
    if (session.organizationId === null) {
      throw apiErrors.validation("isOrganization: the session belongs to no organization");
    }
    return { kind: "organization", id: session.organizationId } as AccountReference;
  };

  router.get("/billing/totals", async (request, response) => {
    const account = billingAccountOf(request, response.locals);
    const totalsQuery = billingTotalsQuerySchema.safeParse(request.query);
    if (!totalsQuery.success) throw validationErrorOf(totalsQuery.error);
    const { from, to } = billingRangeOf(request.query);
    const totals = await readBillingTotals(
      dependencies.database,
      { account, from, to },
      totalsQuery.data.groupBy,
      readLimits.billingTotalsGroupsMax,
    );
    response.json({
      account,
      from: from?.toISOString() ?? null,
      to: to?.toISOString() ?? null,
      groupBy: totalsQuery.data.groupBy,
      ...totals,
    });
  });

  router.get("/billing", async (request, response) => {
    const account = billingAccountOf(request, response.locals);
    const { from, to } = billingRangeOf(request.query);
    const query = { account, from, to };
    // One page when asked (`limit`, `cursor`); without them the whole range, as before.
    const pageQuery = billingPageQuerySchema.safeParse(request.query);
    if (!pageQuery.success) throw validationErrorOf(pageQuery.error);
    if (isPageQuery(pageQuery.data)) {
      const { data, nextCursor } = await readBillingPage(dependencies.database, query, {
        limit: pageQuery.data.limit ?? readLimits.billingPageRowsDefault,
        cursor: pageQuery.data.cursor,
        order: pageQuery.data.order,
      });
      response.json({
        account,
        from: from?.toISOString() ?? null,
        to: to?.toISOString() ?? null,
        data,
        nextCursor,
      });
      return;
    }
    await countBillingHistory(dependencies.database, query, rowsMax);
    await sendBillingJson(
      response,
      { account, from: from?.toISOString() ?? null, to: to?.toISOString() ?? null },
      readBillingHistory(dependencies.database, query, {
        pageSize: billingLimits.billingHistoryPageSize,
        rowsMax,
      }),
    );
  });

  addSessionStatementRoutes(router, dependencies.database);
  router.use(billingErrorMapper);
  return router;
}

export { billingQuerySchema as accountBillingQuerySchema };
