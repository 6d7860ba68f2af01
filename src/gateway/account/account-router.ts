import express, { type Router } from "express";
import type pg from "pg";
import { z } from "zod";
import { readBalanceWon } from "../../billing/account-balances";
import { countBillingHistory, readBillingHistory } from "../../billing/billing-history";
import { billingLimits } from "../../billing/billing-limits";
import type { AccountReference } from "../../ledger/events";
import { apiErrors, validationErrorOf } from "../api-error";
import { sessionOf } from "../middleware/authenticate-session";
import { billingErrorMapper } from "./billing-error-mapper";
import { billingRangeOf } from "./billing-range";
import { sendBillingJson } from "./billing-response";

/**
 * The session's own finance (C4): `GET /balance` and `GET /billing`. Mounted under /llm behind
 * `authenticateSession` (the caller's router does it, as for the key routes).
 */

export interface AccountRouterDependencies {
  database: Pick<pg.Pool, "query">;
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
    const userBalanceWon = await readBalanceWon(dependencies.database, { kind: "user", id: session.userId });
    const organizationId = session.organizationId;
    const organization =
      organizationId === null
        ? null
        : {
            id: organizationId,
            balanceWon: await readBalanceWon(dependencies.database, {
              kind: "organization",
              id: organizationId,
            }),
          };
    response.json({ user: { id: session.userId, balanceWon: userBalanceWon }, organization });
  });

  router.get("/billing", async (request, response) => {
    const session = sessionOf(response.locals);
    const parsed = billingQuerySchema.safeParse(request.query);
    if (!parsed.success) throw validationErrorOf(parsed.error);
    const { from, to } = billingRangeOf(request.query);
    let account: AccountReference = { kind: "user", id: session.userId };
    if (parsed.data.isOrganization === "true") {
      if (session.organizationId === null) {
        throw apiErrors.validation("isOrganization: the session belongs to no organization");
      }
      account = { kind: "organization", id: session.organizationId };
    }
    const query = { account, from, to };
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

  router.use(billingErrorMapper);
  return router;
}

export { billingQuerySchema as accountBillingQuerySchema };
