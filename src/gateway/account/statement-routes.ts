import type { Router } from "express";
import type pg from "pg";
import { z } from "zod";
import { readMonthlyStatement } from "../../billing/statements/monthly-statement";
import { statementMonthOf } from "../../billing/statements/statement-month";
import type { OrganizationRoleService } from "../../keys/organization-role-service";
import type { AccountReference } from "../../ledger/events";
import { apiErrors, validationErrorOf } from "../api-error";
import { sessionOf } from "../middleware/authenticate-session";
import { sendStatement, statementQuerySchema } from "../statements/statement-response";
import { activityIssuerOf } from "./activity-routes";

/**
 * `GET /statements?account=personal|organization[&month=YYYY-MM][&format=csv][&lines=charges]`: the monthly
 * statement of the session's own account or of its organization's; without `month`, the current Seoul month.
 */

export const sessionStatementQuerySchema = statementQuerySchema.extend({
  account: z
    .enum(["personal", "organization"], { error: "must be personal or organization" })
    .default("personal"),
  /** Absent: the current Asia/Seoul month, the one a user most often means. */
  month: statementQuerySchema.shape.month.optional(),
});

export function addSessionStatementRoutes(
  router: Router,
  database: Pick<pg.Pool, "query" | "connect">,
  roles: Pick<OrganizationRoleService, "roleOf">,
  clock: () => Date = () => new Date(),
): void {
  router.get("/statements", async (request, response) => {
    const session = sessionOf(response.locals);
    const parsed = sessionStatementQuerySchema.safeParse(request.query);
    if (!parsed.success) throw validationErrorOf(parsed.error);
    const query = parsed.data;
    let account: AccountReference = { kind: "user", id: session.userId };
    if (query.account === "organization") {
      if (session.organizationId === null)
        throw apiErrors.validation("account: the session belongs to no organization");
      account = { kind: "organization", id: session.organizationId };
      // Its totals are the organization's; its lines are its members' requests (C14, as /llm/billing).
      if (
        query.lines === "charges" &&
        (await activityIssuerOf(roles, response.locals, account)) !== undefined
      )
        throw apiErrors.organizationRoleRefused(
          "Your role in the organization (member) may not read other members' charges; the statement without lines=charges is open to you, and /llm/billing lists your own",
        );
    }
    const now = clock();
    const month = query.month ?? statementMonthOf(now);
    const statement = await readMonthlyStatement(database, account, month, now);
    await sendStatement(response, database, statement, { ...query, month });
  });
}
