import { type ErrorRequestHandler, Router } from "express";
import type pg from "pg";
import { z } from "zod";
import { readLimits } from "../../kernel/limits";
import type { OrganizationRoleService } from "../../keys/organization-role-service";
import { mayDo } from "../../keys/organization-roles";
import type { AccountReference } from "../../ledger/events";
import {
  type ActivityQuery,
  InvalidActivityCursorError,
  readActivityPage,
} from "../activity/activity-read-model";
import { requestOutcomes } from "../activity/request-log-entry";
import { apiErrors, validationErrorOf } from "../api-error";
import { storableString } from "../http/storable-string";
import { sessionOf } from "../middleware/authenticate-session";
import { requestIdOf } from "../middleware/request-id";
import { billingRangeOf } from "./billing-range";

/**
 * `GET /llm/usage/activity` (session; `isOrganization=true|false` as for /llm/billing): every generation
 * request of the caller's account, served, refused, failed or cut, newest first, a page at a time
 * (`limit`, `cursor`), filtered by `model`, `answeredBy`, `keyId`, `status` (HTTP), `outcome`, `from` and
 * `to`. The admin API answers the same for any account (src/gateway/admin/activity-routes.ts). An
 * organization's member who is neither owner nor admin reads only the requests of the organization keys
 * they issued (C14).
 */

const pageRowsText = `must be an integer from 1 to ${readLimits.activityPageRowsMax}`;

export const activityQuerySchema = z.object({
  limit: z.coerce
    .number({ error: pageRowsText })
    .int({ error: pageRowsText })
    .min(1, { error: pageRowsText })
    .max(readLimits.activityPageRowsMax, { error: pageRowsText })
    .default(readLimits.activityPageRowsDefault),
  cursor: z.string().min(1).max(1_000).optional(),
  model: storableString.min(1).max(200).optional().meta({
    description: "the model requested: a request a fallback answered is listed under it, not the fallback",
  }),
  answeredBy: storableString.min(1).max(200).optional().meta({
    description:
      "the model that answered in the requested one's place: the requests a configured fallback answered as it",
  }),
  keyId: z.uuid({ error: "must be a key's uuid" }).optional(),
  status: z.coerce
    .number({ error: "must be an HTTP status such as 429" })
    .int({ error: "must be an HTTP status such as 429" })
    .min(100, { error: "must be an HTTP status such as 429" })
    .max(599, { error: "must be an HTTP status such as 429" })
    .optional(),
  outcome: z.enum(requestOutcomes, { error: "must be served, refused, failed or cut" }).optional(),
  /**
   * One request, by the `x-request-id` its answer carried or its body's `id` (`chatcmpl-…`, `resp-…`, what an
   * SDK shows): every request of the account with that id, as two gateways may give the same one.
   */
  requestId: storableString.min(1).max(200).optional(),
});

const sessionActivityQuerySchema = activityQuerySchema.extend({
  isOrganization: z.enum(["true", "false"], { error: "must be true or false" }).optional(),
});

/** The filters and page of an activity query whose account the caller has settled. */
export function activityRequestOf(
  query: unknown,
  account: AccountReference,
): { query: ActivityQuery; page: { limit: number; cursor: string | undefined } } {
  const parsed = activityQuerySchema.safeParse(query);
  if (!parsed.success) throw validationErrorOf(parsed.error);
  const { from, to } = billingRangeOf(query);
  return {
    query: {
      account,
      from,
      to,
      model: parsed.data.model,
      answeredBy: parsed.data.answeredBy,
      keyId: parsed.data.keyId,
      httpStatus: parsed.data.status,
      outcome: parsed.data.outcome,
      requestId: parsed.data.requestId,
    },
    page: { limit: parsed.data.limit, cursor: parsed.data.cursor },
  };
}

export const activityErrorMapper: ErrorRequestHandler = (error, _request, _response, next) => {
  next(error instanceof InvalidActivityCursorError ? apiErrors.validation(error.message) : error);
};

/**
 * Whose organization activity the session reads: every member's for owners and admins; for a member, only
 * that of the organization keys they issued (C14). Undefined: the whole account's.
 */
export async function activityIssuerOf(
  roles: Pick<OrganizationRoleService, "roleOf">,
  locals: Record<string, unknown>,
  account: AccountReference,
): Promise<string | undefined> {
  if (account.kind !== "organization") return undefined;
  const session = sessionOf(locals);
  const role = await roles.roleOf(session, requestIdOf(locals));
  return mayDo(role, "read-members-activity") ? undefined : session.userId;
}

export function createActivityRouter(
  database: Pick<pg.Pool, "query">,
  roles: Pick<OrganizationRoleService, "roleOf">,
): Router {
  const router = Router();
  router.get("/", async (request, response) => {
    const parsed = sessionActivityQuerySchema.safeParse(request.query);
    if (!parsed.success) throw validationErrorOf(parsed.error);
    const session = sessionOf(response.locals);
    let account: AccountReference = { kind: "user", id: session.userId };
    if (parsed.data.isOrganization === "true") {
      if (session.organizationId === null)
        throw apiErrors.validation("isOrganization: the session belongs to no organization");
      account = { kind: "organization", id: session.organizationId };
    }
    const { query, page } = activityRequestOf(request.query, account);
    const issuedByUserId = await activityIssuerOf(roles, response.locals, account);
    response.json(await readActivityPage(database, { ...query, issuedByUserId }, page));
  });
  router.use(activityErrorMapper);
  return router;
}
