import { Router } from "express";
import { listModels } from "../../providers/catalog";
import type { ApiKeyAdmission } from "./api-key-admission";
import type { ClientFormat } from "./client-format";
import { type GenerationDependencies, generationHandler } from "./generation-handler";

/** /llm/v1: the models list and the two generation endpoints, all behind an API key. */
export function createGenerationRouter(
  dependencies: GenerationDependencies & { admission: ApiKeyAdmission },
  formats: { chatCompletions: ClientFormat; responses: ClientFormat },
): Router {
  const router = Router();
  const modelsBody = {
    object: "list",
    data: listModels().map((model) => ({
      id: model.slug,
      object: "model",
      created: model.created,
      owned_by: model.family,
    })),
  };

  router.get("/models", async (request, response, next) => {
    try {
      await dependencies.admission.authenticate(request.headers.authorization, { requireCredit: false });
      response.json(modelsBody);
    } catch (error) {
      next(error);
    }
  });
  router.post("/chat/completions", generationHandler(formats.chatCompletions, dependencies));
  router.post("/responses", generationHandler(formats.responses, dependencies));
  return router;
}
