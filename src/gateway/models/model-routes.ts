import { Router } from "express";
import { z } from "zod";
import type { ModelPriceList } from "../../billing/read-models/model-price-list";
import { apiErrors, validationErrorOf } from "../api-error";
import { storableString } from "../http/storable-string";
import { sessionOf } from "../middleware/authenticate-session";
import { pricedModels } from "./priced-model-list";

/**
 * `GET /llm/models` and `GET /llm/models/:id` (session): the models and prices `GET /llm/v1/models` shows an
 * API key, for the console, which holds a session rather than a key. Prices are the session's personal
 * ones, or its organization's with `isOrganization=true` (as for /llm/billing).
 */

export const modelIdPathSchema = z.object({ id: storableString });

export const modelsQuerySchema = z.object({
  isOrganization: z.enum(["true", "false"], { error: "must be true or false" }).optional(),
});

export function createModelRouter(prices: ModelPriceList): Router {
  const router = Router();
  const organizationOf = (query: unknown, locals: Record<string, unknown>): string | null => {
    const parsed = modelsQuerySchema.safeParse(query);
    if (!parsed.success) throw validationErrorOf(parsed.error);
    if (parsed.data.isOrganization !== "true") return null;
    const { organizationId } = sessionOf(locals);
    if (organizationId === null)
      throw apiErrors.validation("isOrganization: the session belongs to no organization");
    return organizationId;
  };
  router.get("/", async (request, response) => {
    const data = await pricedModels(prices, organizationOf(request.query, response.locals));
    response.json({ object: "list", data });
  });
  router.get("/:id", async (request, response) => {
    const parsed = modelIdPathSchema.safeParse(request.params);
    if (!parsed.success) throw validationErrorOf(parsed.error);
    const { id } = parsed.data;
    const models = await pricedModels(prices, organizationOf(request.query, response.locals));
    const model = models.find((candidate) => candidate.id === id);
    if (model === undefined) throw apiErrors.unknownModel(id, "GET /llm/models");
    response.json(model);
  });
  return router;
}
