import { type NextFunction, type Request, type Response, Router } from "express";
import { z } from "zod";
import { noKeyLimits } from "../../keys/api-key-limits";
import {
  ApiKeyNotFoundError,
  type ApiKeyService,
  type KeyCommandAuthorization,
  OrganizationRequiredError,
  type SpendShown,
} from "../../keys/api-key-service";
import {
  OrganizationRoleRefusedError,
  type OrganizationRoleService,
} from "../../keys/organization-role-service";
import type { AccountReference } from "../../ledger/events";
import { activityIssuerOf } from "../account/activity-routes";
import { apiErrors, validationErrorOf } from "../api-error";
import { storableString } from "../http/storable-string";
import { sessionOf } from "../middleware/authenticate-session";
import { requestIdOf } from "../middleware/request-id";
import { closedBodySchema } from "../wire/closed-object-schema";
import { keyLimitsBodySchema } from "./key-limits-bodies";
import { keyDescriptionSchema, keyNameSchema } from "./key-text-schemas";

/** Key management (/llm/apis, C4), behind a logged-in session. */

// Closed: a misspelt field (`isOrganisation`) would otherwise issue a personal key without a word.
const issueBody = closedBodySchema(
  {
    name: keyNameSchema,
    description: keyDescriptionSchema,
    isOrganization: z.boolean({ error: "must be true or false" }).optional().default(false),
  },
  { unknownField: "is not a field of a key (name, description, isOrganization)" },
);

const statusBody = closedBodySchema({
  status: z.union([z.literal(0), z.literal(1)], { error: "must be 1 or 0" }),
});

const listQuery = z.object({
  isOrganization: z.enum(["true", "false"], { error: "must be true or false" }).optional(),
});

const keyPath = z.object({ uuid: storableString });

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * Only owners and admins change the limits of the organization's keys (C14); a personal key's are its
 * owner's. Decided in the key's turn, after the key is found (a key not the caller's stays 404 whatever the
 * role), right before the change is appended.
 */
function limitsRoleOf(roles: OrganizationRoleService, response: Response): KeyCommandAuthorization {
  return async (owner) => {
    if (owner.kind !== "organization") return undefined;
    return roles.authorize(sessionOf(response.locals), "set-key-limits", requestIdOf(response.locals));
  };
}

const everyKeysSpend: SpendShown = { of: "every-key" };

/** A member who may not read other members' activity sees the spend of the keys they issued alone (C14). */
async function spendShownTo(
  roles: OrganizationRoleService,
  locals: Record<string, unknown>,
  owner: AccountReference,
): Promise<SpendShown> {
  const issuer = await activityIssuerOf(roles, locals, owner);
  return issuer === undefined ? everyKeysSpend : { of: "keys-issued-by", userId: issuer };
}

export function createKeyRouter(service: ApiKeyService, roles: OrganizationRoleService): Router {
  const router = Router();

  router.get(
    "/",
    handle(async (request, response) => {
      const query = parse(listQuery, request.query);
      const isOrganization = query.isOrganization === "true";
      const session = sessionOf(response.locals);
      const owner: AccountReference = isOrganization
        ? { kind: "organization", id: session.organizationId ?? "" }
        : { kind: "user", id: session.userId };
      const spendShown =
        isOrganization && session.organizationId !== null
          ? await spendShownTo(roles, response.locals, owner)
          : everyKeysSpend;
      response.json({ data: await service.list(session, isOrganization, spendShown) });
    }),
  );

  router.post(
    "/",
    handle(async (request, response) => {
      const body = parse(issueBody, request.body);
      const issued = await service.issue(sessionOf(response.locals), body, requestIdOf(response.locals));
      response.status(201).json(issued);
    }),
  );

  router.patch(
    "/:uuid/status",
    handle(async (request, response) => {
      const keyId = keyIdOf(request);
      const { status } = parse(statusBody, request.body);
      await service.changeStatus(sessionOf(response.locals), keyId, status, requestIdOf(response.locals));
      response.json({ uuid: keyId, status });
    }),
  );

  // Limits (docs/billing.md, "Per-key limits"): read, replace, clear; `{ uuid, limits, spend }` each time.
  router.get(
    "/:uuid/limits",
    handle(async (request, response) => {
      const keyId = keyIdOf(request);
      const session = sessionOf(response.locals);
      const owner = await service.ownerOfManagedKey(session, keyId);
      const spendShown = await spendShownTo(roles, response.locals, owner);
      response.json({ uuid: keyId, ...(await service.readLimits(session, keyId, spendShown)) });
    }),
  );

  router.put(
    "/:uuid/limits",
    handle(async (request, response) => {
      const keyId = keyIdOf(request);
      const limits = parse(keyLimitsBodySchema, request.body);
      const view = await service.setLimits(
        sessionOf(response.locals),
        keyId,
        limits,
        requestIdOf(response.locals),
        limitsRoleOf(roles, response),
      );
      response.json({ uuid: keyId, ...view });
    }),
  );

  router.delete(
    "/:uuid/limits",
    handle(async (request, response) => {
      const keyId = keyIdOf(request);
      const view = await service.setLimits(
        sessionOf(response.locals),
        keyId,
        noKeyLimits,
        requestIdOf(response.locals),
        limitsRoleOf(roles, response),
      );
      response.json({ uuid: keyId, ...view });
    }),
  );

  router.delete(
    "/:uuid",
    handle(async (request, response) => {
      const keyId = keyIdOf(request);
      await service.delete(sessionOf(response.locals), keyId, requestIdOf(response.locals));
      response.json({ uuid: keyId, deleted: true });
    }),
  );

  return router;
}

function parse<T extends z.ZodType>(schema: T, value: unknown): z.infer<T> {
  const parsed = schema.safeParse(value ?? {});
  if (!parsed.success) throw validationErrorOf(parsed.error);
  return parsed.data;
}

/** A key id that is not a uuid names no key (404), unless it is text no key id could ever be (400). */
function keyIdOf(request: Request): string {
  const keyId = parse(keyPath, request.params).uuid.toLowerCase();
  if (!uuidPattern.test(keyId)) throw apiErrors.notFound("API key not found");
  return keyId;
}

function handle(work: (request: Request, response: Response) => Promise<void>) {
  return (request: Request, response: Response, next: NextFunction) => {
    work(request, response).catch((error: unknown) => {
      if (error instanceof ApiKeyNotFoundError) next(apiErrors.notFound("API key not found"));
      else if (error instanceof OrganizationRequiredError)
        next(
          apiErrors.validation(
            request.baseUrl.endsWith("/apis")
              ? "isOrganization: this session belongs to no organization"
              : "This session belongs to no organization",
          ),
        );
      else if (error instanceof OrganizationRoleRefusedError)
        next(apiErrors.organizationRoleRefused(error.message));
      else next(error);
    });
  };
}

export {
  handle as handleKeyRoute,
  issueBody as issueKeyBodySchema,
  keyIdOf,
  listQuery as listKeysQuerySchema,
  statusBody as keyStatusBodySchema,
};
