import { Router } from "express";
import { z } from "zod";
import type { OrganizationRoleService } from "../../keys/organization-role-service";
import { organizationRoles } from "../../keys/organization-roles";
import { validationErrorOf } from "../api-error";
import { accountIdentifier } from "../http/account-identifier";
import { sessionOf } from "../middleware/authenticate-session";
import { requestIdOf } from "../middleware/request-id";
import { closedBodySchema } from "../wire/closed-object-schema";
import { handleKeyRoute } from "./key-routes";

/**
 * `GET /llm/organization/members` (any member: the members, their roles, and the session's own role with
 * what it may do) and `PUT /llm/organization/members/{userId}` `{ role }` (owners and admins; 403/160
 * otherwise). C14; the role table is in docs/api.md, "Roles in an organization".
 */

export const memberPathSchema = z.object({ userId: accountIdentifier });

export const memberRoleBodySchema = closedBodySchema({
  role: z.enum(organizationRoles, { error: "must be owner, admin or member" }),
});

export function createOrganizationMemberRouter(roles: OrganizationRoleService): Router {
  const router = Router();

  router.get(
    "/",
    handleKeyRoute(async (_request, response) => {
      const session = sessionOf(response.locals);
      const you = await roles.accessOf(session, requestIdOf(response.locals));
      response.json({
        organizationId: you.organizationId,
        you: { userId: you.userId, role: you.role, actions: you.actions },
        data: await roles.members(you.organizationId),
      });
    }),
  );

  router.put(
    "/:userId",
    handleKeyRoute(async (request, response) => {
      const path = memberPathSchema.safeParse(request.params);
      if (!path.success) throw validationErrorOf(path.error);
      const body = memberRoleBodySchema.safeParse(request.body ?? {});
      if (!body.success) throw validationErrorOf(body.error);
      const member = await roles.grant(
        sessionOf(response.locals),
        path.data.userId,
        body.data.role,
        requestIdOf(response.locals),
      );
      response.json(member);
    }),
  );

  return router;
}
