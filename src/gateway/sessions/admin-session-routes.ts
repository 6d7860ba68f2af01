import { Router } from "express";
import type { Logger } from "pino";
import { z } from "zod";
import { sessionLimits } from "../../kernel/limits";
import type { SessionTokens } from "../../sessions/session-tokens";
import { validationErrorOf } from "../api-error";
import { requestIdOf } from "../middleware/request-id";
import { closedBodySchema } from "../wire/closed-object-schema";

/** POST /admin/sessions (C6): mints a session token, as the platform that logs users in would. */

const mintBody = closedBodySchema({
  userId: z.string().trim().min(1, "is required").max(sessionLimits.accountIdLengthMax),
  organizationId: z.string().trim().min(1).max(sessionLimits.accountIdLengthMax).nullish(),
  ttlSeconds: z.number().int().min(1).max(sessionLimits.sessionTtlSecondsMax).optional(),
});

/**
 * A minted session is the admin acting as that user, as a sign-in link is: logged with its actor, the
 * request, whom it signs in and until when (never the token). It moves no money, so it is no ledger event.
 */
export function createAdminSessionRouter(tokens: SessionTokens, logger: Logger): Router {
  const router = Router();
  router.post("/sessions", async (request, response, next) => {
    try {
      const parsed = mintBody.safeParse(request.body ?? {});
      if (!parsed.success) throw validationErrorOf(parsed.error);
      const session = { userId: parsed.data.userId, organizationId: parsed.data.organizationId ?? null };
      const { token, expiresAt } = await tokens.mint(
        session,
        parsed.data.ttlSeconds ?? sessionLimits.sessionTtlSecondsDefault,
      );
      logger.info(
        {
          actor: typeof response.locals.actor === "string" ? response.locals.actor : "admin",
          requestId: requestIdOf(response.locals),
          ...session,
          expiresAt: expiresAt.toISOString(),
        },
        "session minted",
      );
      response.status(201).json({ token, expiresAt: expiresAt.toISOString() });
    } catch (error) {
      next(error);
    }
  });
  return router;
}

export { mintBody as mintSessionBodySchema };
