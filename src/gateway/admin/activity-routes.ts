import { Router } from "express";
import type pg from "pg";
import { z } from "zod";
import { activityErrorMapper, activityRequestOf } from "../account/activity-routes";
import { readActivityPage } from "../activity/activity-read-model";
import { parseWith } from "./admin-context";
import { accountReferenceText } from "./admin-request-schemas";

/**
 * `GET /admin/activity?account=user:ID|organization:ID`: the activity log of any account, as
 * `GET /llm/usage/activity` answers it for the session's own (same filters, same page).
 */

export const adminActivityQuerySchema = z.object({
  account: accountReferenceText,
});

export function createAdminActivityRouter(database: Pick<pg.Pool, "query">): Router {
  const router = Router();
  router.get("/activity", async (request, response) => {
    const { account } = parseWith(adminActivityQuerySchema, request.query);
    const { query, page } = activityRequestOf(request.query, account);
    response.json(await readActivityPage(database, query, page));
  });
  router.use(activityErrorMapper);
  return router;
}
