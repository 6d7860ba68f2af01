import { Router } from "express";
import type { Logger } from "pino";
import { sessionLimits } from "../../kernel/limits";
import type { ApiKeyService } from "../../keys/api-key-service";
import type { ConsoleAuth } from "../console/console-auth";
import { storableString } from "../http/storable-string";
import { handleKeyRoute } from "../keys/key-routes";
import { keyDescriptionSchema, keyNameSchema } from "../keys/key-text-schemas";
import { publicOriginOf } from "../middleware/public-origin";
import { requestIdOf } from "../middleware/request-id";
import { closedBodySchema } from "../wire/closed-object-schema";
import { parseWith } from "./admin-context";
import { accountReferenceText } from "./admin-request-schemas";

/**
 * Getting a user in and equipped without curl tricks:
 * - `POST /admin/sign-in-links` `{ userId, organizationId? }` → 201 `{ path, url, expiresAt }`: a one-time
 *   console sign-in link for that user (minutes-short, single use across restarts). Logged with its actor;
 *   a sign-in link moves no money, so it is not a ledger event.
 * - `POST /admin/keys` `{ account: "user:ID" | "organization:ID", name, description?, issuedForUserId }` →
 *   201 as `POST /llm/apis`: a key for any account, its `ApiKeyIssued` event carrying the admin as actor.
 *   An organization key names the member it is issued for, who becomes a member as by issuing it (its
 *   owner, if the organization's first): an admin is no member, so the key cannot be the admin's.
 */

const identifier = storableString.trim().min(1, "is required").max(sessionLimits.accountIdLengthMax);

export const signInLinkBodySchema = closedBodySchema({
  userId: identifier,
  organizationId: identifier.nullish(),
});

export const adminIssueKeyBodySchema = closedBodySchema({
  account: accountReferenceText,
  name: keyNameSchema,
  description: keyDescriptionSchema,
  /** For an organization key: the member it is for (recorded as its issuing user). */
  issuedForUserId: identifier.optional(),
}).superRefine((body, context) => {
  const organizationKey = body.account.kind === "organization";
  if (organizationKey && body.issuedForUserId === undefined)
    context.addIssue({
      code: "custom",
      path: ["issuedForUserId"],
      message: "is required for an organization key: the member it is issued for (its owner, if the first)",
    });
  if (!organizationKey && body.issuedForUserId !== undefined)
    context.addIssue({
      code: "custom",
      path: ["issuedForUserId"],
      message: "is only for an organization key: a personal key is its user's",
    });
});

export function createAdminUserAccessRouter(dependencies: {
  keys: ApiKeyService;
  consoleAuth: ConsoleAuth;
  logger: Logger;
}): Router {
  const router = Router();
  const actorOf = (locals: Record<string, unknown>) =>
    typeof locals.actor === "string" ? locals.actor : "admin";

  router.post("/sign-in-links", async (request, response) => {
    const body = parseWith(signInLinkBodySchema, request.body ?? {});
    const session = { userId: body.userId, organizationId: body.organizationId ?? null };
    const { code, expiresAt } = await dependencies.consoleAuth.mintSignInLink(session);
    const path = `/console/sign-in?code=${code}`;
    dependencies.logger.info(
      { actor: actorOf(response.locals), requestId: requestIdOf(response.locals), ...session },
      "sign-in link minted",
    );
    response.status(201).json({
      path,
      url: `${publicOriginOf(request)}${path}`,
      expiresAt: expiresAt.toISOString(),
    });
  });

  router.post(
    "/keys",
    handleKeyRoute(async (request, response) => {
      const body = parseWith(adminIssueKeyBodySchema, request.body ?? {});
      const issued = await dependencies.keys.issueAsAdmin(
        { admin: actorOf(response.locals) },
        { owner: body.account, issuedForUserId: body.issuedForUserId ?? null },
        { name: body.name, description: body.description },
        requestIdOf(response.locals),
      );
      response.status(201).json(issued);
    }),
  );
  return router;
}
