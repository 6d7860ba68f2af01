import { Router } from "express";
import type { ApiKeyService } from "../../keys/api-key-service";
import type { OrganizationRoleService } from "../../keys/organization-role-service";
import { apiErrors, validationErrorOf } from "../api-error";
import { sessionOf } from "../middleware/authenticate-session";
import { requestIdOf } from "../middleware/request-id";
import { organizationKeyDefaultsBodySchema } from "./key-limits-bodies";
import { handleKeyRoute } from "./key-routes";

/**
 * `GET|PUT /llm/organization/key-defaults` → `{ organizationId, allowedModels }`: what the session's
 * organization's keys issued from now on start with (docs/billing.md, "Per-key limits"). Any member reads
 * it; owners and admins set it (403/160 for a member).
 */
export function createOrganizationKeyDefaultsRouter(
  keys: ApiKeyService,
  roles: OrganizationRoleService,
): Router {
  const router = Router();
  const organizationOf = (locals: Record<string, unknown>): string => {
    const { organizationId } = sessionOf(locals);
    if (organizationId === null) throw apiErrors.validation("This session belongs to no organization");
    return organizationId;
  };

  router.get(
    "/",
    handleKeyRoute(async (_request, response) => {
      response.json(await keys.readOrganizationKeyDefaults(organizationOf(response.locals)));
    }),
  );

  router.put(
    "/",
    handleKeyRoute(async (request, response) => {
      const organizationId = organizationOf(response.locals);
      const parsed = organizationKeyDefaultsBodySchema.safeParse(request.body ?? {});
      if (!parsed.success) throw validationErrorOf(parsed.error);
      // Every member reads the defaults; only owners and admins set them (C14), decided with the change.
      const defaults = await keys.setOrganizationKeyDefaults(
        sessionOf(response.locals),
        organizationId,
        parsed.data.allowedModels,
        requestIdOf(response.locals),
        () => roles.authorize(sessionOf(response.locals), "set-key-defaults", requestIdOf(response.locals)),
      );
      response.json(defaults);
    }),
  );

  return router;
}
