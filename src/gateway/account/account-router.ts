import express, { type Router } from "express";
import type pg from "pg";
import { z } from "zod";
import { readAccountFunds } from "../../billing/read-models/account-balances";
import { countBillingHistory, readBillingHistory } from "../../billing/read-models/billing-history";
import { readBillingPage, readBillingTotals } from "../../billing/read-models/billing-pages";
import { billingLimits, readLimits } from "../../kernel/limits";
import type { OrganizationRoleService } from "../../keys/organization-role-service";
import type { AccountReference } from "../../ledger/events";
import { apiErrors, validationErrorOf } from "../api-error";
import { sessionOf } from "../middleware/authenticate-session";
import { activityIssuerOf } from "./activity-routes";
import { billingErrorMapper } from "./billing-error-mapper";
import { billingRangeOf } from "./billing-range";
import { billingPageQuerySchema, billingTotalsQuerySchema, isPageQuery } from "./billing-read-schemas";
import { sendBillingJson } from "./billing-response";
import { addSessionStatementRoutes } from "./statement-routes";

/**
 * The session's own finance (C4): `GET /balance` (each account's `balanceWon`, and `heldWon` / `pendingWon`:
 * what requests in flight hold and what is recorded but not charged yet) and `GET /billing`. Mounted under /llm behind
 * `authenticateSession` (the caller's router does it, as for the key routes). An organization's charges are
 * its members' requests: a member who is neither owner nor admin reads those of the keys they issued (C14,
 * as the activity log), while its balance and statements' totals are the organization's, open to each member.
 */

export interface AccountRouterDependencies {
  database: Pick<pg.Pool, "query" | "connect">;
  /** A member who is neither owner nor admin reads only the charges of the keys they issued (C14). */
  roles: Pick<OrganizationRoleService, "roleOf">;
  billingHistoryRowsMax?: number;
  /** What "now" is for statements (the current month, provisional or not); tests fix it. */
  clock?: () => Date;
}

const billingQuerySchema = z.object({
  isOrganization: z.enum(["true", "false"], { error: "must be true or false" }).optional(),
});

export function createAccountRouter(dependencies: AccountRouterDependencies): Router {
  const router = express.Router();
  mountBalanceRoute(router, dependencies);
  mountBillingTotalsRoute(router, dependencies);
  mountBillingHistoryRoute(router, dependencies);
  addSessionStatementRoutes(router, dependencies.database, dependencies.roles, dependencies.clock);
  router.use(billingErrorMapper);
  return router;
}

/** `GET /balance`: the session's account and its organization's, each its balance with its funds in flight. */
function mountBalanceRoute(router: Router, { database }: AccountRouterDependencies): void {
  router.get("/balance", async (_request, response) => {
    const session = sessionOf(response.locals);
    const fundsOf = async (account: AccountReference) => ({
      id: account.id,
      ...(await readAccountFunds(database, account)),
    });
    const organizationId = session.organizationId;
    response.json({
      user: await fundsOf({ kind: "user", id: session.userId }),
      organization:
        organizationId === null ? null : await fundsOf({ kind: "organization", id: organizationId }),
    });
  });
}

/** The session's own account, or its organization's with `isOrganization=true`. */
function billingAccountOf(request: { query: unknown }, locals: Record<string, unknown>): AccountReference {
  const session = sessionOf(locals);
  const parsed = billingQuerySchema.safeParse(request.query);
  if (!parsed.success) throw validationErrorOf(parsed.error);
  if (parsed.data.isOrganization !== "true") return { kind: "user", id: session.userId };
  if (session.organizationId === null) {
    throw apiErrors.validation("isOrganization: the session belongs to no organization");
  }
  return { kind: "organization", id: session.organizationId };
}

/** `GET /billing/totals`: the range's charges summed, grouped as asked. */
function mountBillingTotalsRoute(router: Router, { database, roles }: AccountRouterDependencies): void {
  router.get("/billing/totals", async (request, response) => {
    const account = billingAccountOf(request, response.locals);
    const totalsQuery = billingTotalsQuerySchema.safeParse(request.query);
    if (!totalsQuery.success) throw validationErrorOf(totalsQuery.error);
    const { from, to } = billingRangeOf(request.query);
    const issuedByUserId = await activityIssuerOf(roles, response.locals, account);
    const totals = await readBillingTotals(
      database,
      { account, from, to, issuedByUserId },
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
}

/** `GET /billing`: one page when asked (`limit`, `cursor`); without them the whole range, as before. */
function mountBillingHistoryRoute(router: Router, dependencies: AccountRouterDependencies): void {
  const { database, roles } = dependencies;
  const rowsMax = dependencies.billingHistoryRowsMax ?? billingLimits.billingHistoryRowsMax;
  router.get("/billing", async (request, response) => {
    const account = billingAccountOf(request, response.locals);
    const { from, to } = billingRangeOf(request.query);
    const issuedByUserId = await activityIssuerOf(roles, response.locals, account);
    const query = { account, from, to, issuedByUserId };
    const range = { account, from: from?.toISOString() ?? null, to: to?.toISOString() ?? null };
    const pageQuery = billingPageQuerySchema.safeParse(request.query);
    if (!pageQuery.success) throw validationErrorOf(pageQuery.error);
    if (isPageQuery(pageQuery.data)) {
      const { data, nextCursor } = await readBillingPage(database, query, {
        limit: pageQuery.data.limit ?? readLimits.billingPageRowsDefault,
        cursor: pageQuery.data.cursor,
        order: pageQuery.data.order,
      });
      response.json({ ...range, data, nextCursor });
      return;
    }
    await countBillingHistory(database, query, rowsMax);
    await sendBillingJson(
      response,
      range,
      readBillingHistory(database, query, { pageSize: billingLimits.billingHistoryPageSize, rowsMax }),
    );
  });
}

export { billingQuerySchema as accountBillingQuerySchema };
