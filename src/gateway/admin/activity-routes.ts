import { Router } from "express";
import type pg from "pg";
import { z } from "zod";
import type { AccountReference } from "../../ledger/events";
import { activityErrorMapper, activityRequestOf } from "../account/activity-routes";
import { readActivityPage } from "../activity/activity-read-model";
import { parseWith } from "./admin-context";

/**
 * `GET /admin/activity?account=user:ID|organization:ID`: the activity log of any account, as
 * `GET /llm/usage/activity` answers it for the session's own (same filters, same page).
 */

export const adminActivityQuerySchema = z.object({
  account: z
    .string({ error: "must be user:ID or organization:ID" })
    .regex(/^(user|organization):.{1,200}$/, "must be user:ID or organization:ID"),
});

export function createAdminActivityRouter(database: Pick<pg.Pool, "query">): Router {
  const router = Router();
  router.get("/activity", async (request, response) => {
    const { account } = parseWith(adminActivityQuerySchema, request.query);
    const { query, page } = activityRequestOf(request.query, accountOf(account));
    response.json(await readActivityPage(database, query, page));
  });
  router.use(activityErrorMapper);
  return router;
}

function accountOf(text: string): AccountReference {
  const separator = text.indexOf(":");
  const kind = text.slice(0, separator);
  if (kind !== "user" && kind !== "organization") throw new Error(`schema let through account kind ${kind}`);
  return { kind, id: text.slice(separator + 1) };
}
