import { Router } from "express";
import { z } from "zod";
import { sessionLimits } from "../../kernel/limits";
import type { SessionTokens } from "../../sessions/session-tokens";
import { validationErrorOf } from "../api-error";
import { closedBodySchema } from "../wire/closed-object-schema";

/** POST /admin/sessions (C6): mints a session token, as the platform that logs users in would. */

const mintBody = closedBodySchema({
  userId: z.string().trim().min(1, "is required").max(sessionLimits.accountIdLengthMax),
  organizationId: z.string().trim().min(1).max(sessionLimits.accountIdLengthMax).nullish(),
  ttlSeconds: z.number().int().min(1).max(sessionLimits.sessionTtlSecondsMax).optional(),
});

export function createAdminSessionRouter(tokens: SessionTokens): Router {
  const router = Router();
  router.post("/sessions", async (request, response, next) => {
    try {
      const parsed = mintBody.safeParse(request.body ?? {});
      if (!parsed.success) throw validationErrorOf(parsed.error);
      const { token, expiresAt } = await tokens.mint(
        { userId: parsed.data.userId, organizationId: parsed.data.organizationId ?? null },
        parsed.data.ttlSeconds ?? sessionLimits.sessionTtlSecondsDefault,
      );
      response.status(201).json({ token, expiresAt: expiresAt.toISOString() });
    } catch (error) {
      next(error);
    }
  });
  return router;
}

export { mintBody as mintSessionBodySchema };
