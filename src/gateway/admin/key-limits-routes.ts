import { Router as createRouter, type Router } from "express";
import { z } from "zod";
import { noKeyLimits } from "../../keys/api-key-limits";
import type { ApiKeyService } from "../../keys/api-key-service";
import { accountIdentifier } from "../http/account-identifier";
import { keyLimitsBodySchema, organizationKeyDefaultsBodySchema } from "../keys/key-limits-bodies";
import { handleKeyRoute, keyIdOf } from "../keys/key-routes";
import { requestIdOf } from "../middleware/request-id";
import { parseWith } from "./admin-context";

/**
 * An admin's hand on any key's limits (the sessions' own routes are `/llm/apis/:uuid/limits`):
 * `GET|PUT|DELETE /admin/keys/:uuid/limits` → `{ uuid, limits, spend }`, and on any organization's defaults
 * for its new keys: `GET|PUT /admin/organizations/:id/key-defaults` → `{ organizationId, allowedModels }`.
 * The event records the admin as actor.
 */
export function createAdminKeyLimitsRouter(keys: ApiKeyService): Router {
  const router = createRouter();
  const adminOf = (locals: Record<string, unknown>) => ({
    admin: typeof locals.actor === "string" ? locals.actor : "admin",
  });

  router.get(
    "/keys/:uuid/limits",
    handleKeyRoute(async (request, response) => {
      const keyId = keyIdOf(request);
      response.json({ uuid: keyId, ...(await keys.readLimits(adminOf(response.locals), keyId)) });
    }),
  );

  router.put(
    "/keys/:uuid/limits",
    handleKeyRoute(async (request, response) => {
      const keyId = keyIdOf(request);
      const limits = parseWith(keyLimitsBodySchema, request.body ?? {});
      const view = await keys.setLimits(
        adminOf(response.locals),
        keyId,
        limits,
        requestIdOf(response.locals),
      );
      response.json({ uuid: keyId, ...view });
    }),
  );

  router.delete(
    "/keys/:uuid/limits",
    handleKeyRoute(async (request, response) => {
      const keyId = keyIdOf(request);
      const view = await keys.setLimits(
        adminOf(response.locals),
        keyId,
        noKeyLimits,
        requestIdOf(response.locals),
      );
      response.json({ uuid: keyId, ...view });
    }),
  );

  const organizationOf = (params: unknown): string => parseWith(organizationPathSchema, params).id;
  router.get(
    "/organizations/:id/key-defaults",
    handleKeyRoute(async (request, response) => {
      response.json(await keys.readOrganizationKeyDefaults(organizationOf(request.params)));
    }),
  );
  router.put(
    "/organizations/:id/key-defaults",
    handleKeyRoute(async (request, response) => {
      const { allowedModels } = parseWith(organizationKeyDefaultsBodySchema, request.body ?? {});
      const defaults = await keys.setOrganizationKeyDefaults(
        adminOf(response.locals),
        organizationOf(request.params),
        allowedModels,
        requestIdOf(response.locals),
      );
      response.json(defaults);
    }),
  );

  return router;
}

export const organizationPathSchema = z.object({ id: accountIdentifier });
