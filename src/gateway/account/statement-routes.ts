import type { Router } from "express";
import type pg from "pg";
import { z } from "zod";
import { readMonthlyStatementWithGroups } from "../../billing/statements/monthly-statement";
import { statementMonthOf } from "../../billing/statements/statement-month";
import { statementSeenByMember } from "../../billing/statements/statement-seen-by-member";
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
    // A member of the organization, who reads the activity of the keys they issued alone (C14).
    let member: string | undefined;
    if (query.account === "organization") {
      if (session.organizationId === null)
        throw apiErrors.validation("account: the session belongs to no organization");
      account = { kind: "organization", id: session.organizationId };
      member = await activityIssuerOf(roles, response.locals, account);
      // Its totals are the organization's; its lines are its members' requests (C14, as /llm/billing).
      if (query.lines === "charges" && member !== undefined)
        throw apiErrors.organizationRoleRefused(
          "Your role in the organization (member) may not read other members' charges; the statement without lines=charges is open to you, and /llm/billing lists your own",
        );
    }
    const now = clock();
    const month = query.month ?? statementMonthOf(now);
    const { statement, chargeGroups } = await readMonthlyStatementWithGroups(database, account, month, now);
    await sendStatement(
      response,
      database,
      member === undefined
        ? statement
        : await statementSeenByMember(database, statement, chargeGroups, member),
      { ...query, month },
    );
  });
}
