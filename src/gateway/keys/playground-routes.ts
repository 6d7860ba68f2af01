import { Router } from "express";
import { z } from "zod";
import type { ApiKeyService } from "../../keys/api-key-service";
import { PlaygroundKeys } from "../../keys/playground-key";
import { validationErrorOf } from "../api-error";
import { sessionOf } from "../middleware/authenticate-session";
import { requestIdOf } from "../middleware/request-id";
import { closedBodySchema } from "../wire/closed-object-schema";
import { handleKeyRoute } from "./key-routes";

/**
 * `POST /llm/playground/key` (session): a fresh API key of the session's account (its organization's with
 * `isOrganization: true`) for the console's playground, replacing the user's previous one there (src/keys/playground-key.ts).
 * The playground then calls `/llm/v1` with it; a reply's cost is `GET /llm/usage/activity?requestId=` of
 * the reply's `x-request-id`.
 */

export const playgroundKeyBodySchema = closedBodySchema({
  isOrganization: z.boolean({ error: "must be true or false" }).optional().default(false),
});

export function createPlaygroundRouter(keys: ApiKeyService): Router {
  const router = Router();
  const playgroundKeys = new PlaygroundKeys(keys);
  router.post(
    "/key",
    handleKeyRoute(async (request, response) => {
      const parsed = playgroundKeyBodySchema.safeParse(request.body ?? {});
      if (!parsed.success) throw validationErrorOf(parsed.error);
      const issued = await playgroundKeys.rotate(
        sessionOf(response.locals),
        parsed.data.isOrganization,
        requestIdOf(response.locals),
      );
      response.status(201).json({ ...issued, baseUrl: "/llm/v1" });
    }),
  );
  return router;
}
