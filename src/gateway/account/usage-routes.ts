import { Router } from "express";
import type pg from "pg";
import { z } from "zod";
import { readUsageByDay, type UsageDayRow } from "../../billing/read-models/usage-by-day";
import { readLimits } from "../../kernel/limits";
import type { OrganizationRoleService } from "../../keys/organization-role-service";
import type { AccountReference } from "../../ledger/events";
import { apiErrors, validationErrorOf } from "../api-error";
import { sessionOf } from "../middleware/authenticate-session";
import { activityIssuerOf } from "./activity-routes";
import { isRangeSeoulDate, rangeSeoulDateMin } from "./billing-range";

/**
 * `GET /llm/usage?from&to&isOrganization` (session): the caller's charged usage per Seoul day × model × key,
 * read from the usage-by-day projection (src/billing/read-models/usage-by-day.ts). `from` and `to` are Seoul dates, both
 * inclusive. Tenancy is the session's: personal usage of `sub`, or organization usage of `org` (a member who
 * is neither owner nor admin: only the organization keys they issued, C14).
 */

const seoulDate = z
  .string()
  .refine(isRangeSeoulDate, `must be a date "YYYY-MM-DD" from ${rangeSeoulDateMin} (a Seoul day)`);
export const usageQuerySchema = z.object({
  from: seoulDate.optional(),
  to: seoulDate.optional(),
  isOrganization: z.enum(["true", "false"], { error: "must be true or false" }).optional(),
});

export interface UsageResponse {
  account: AccountReference;
  from: string | null;
  to: string | null;
  data: UsageDayRow[];
}

export function createUsageRouter(
  database: Pick<pg.Pool, "query">,
  roles: Pick<OrganizationRoleService, "roleOf">,
): Router {
  const router = Router();
  router.get("/", async (request, response, next) => {
    try {
      const parsed = usageQuerySchema.safeParse(request.query);
      if (!parsed.success) throw validationErrorOf(parsed.error);
      const { from, to, isOrganization } = parsed.data;
      if (from !== undefined && to !== undefined && from > to) {
        throw apiErrors.validation("from: must not be after to");
      }
      const session = sessionOf(response.locals);
      let account: AccountReference = { kind: "user", id: session.userId };
      if (isOrganization === "true") {
        if (session.organizationId === null) {
          throw apiErrors.validation("isOrganization: the session belongs to no organization");
        }
        account = { kind: "organization", id: session.organizationId };
      }
      const issuedByUserId = await activityIssuerOf(roles, response.locals, account);
      const rows = await readUsageByDay(database, account, { from, to }, issuedByUserId);
      if (rows.length > readLimits.usageByDayRowsMax) {
        throw apiErrors.validation(
          `the range holds more than ${readLimits.usageByDayRowsMax} rows: narrow it with from and to`,
        );
      }
      const body: UsageResponse = { account, from: from ?? null, to: to ?? null, data: rows };
      response.json(body);
    } catch (error) {
      next(error);
    }
  });
  return router;
}
