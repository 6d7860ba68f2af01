import { type NextFunction, type Request, type Response, Router } from "express";
import { z } from "zod";
import {
  type AlertService,
  WebhookNotFoundError,
  WebhookRequestError,
} from "../../billing/alerts/alert-service";
import { keyLimitBounds, webhookLimits } from "../../kernel/limits";
import { creditDecimalPlaces, formatMoney, isDecimalString, parseMoney } from "../../kernel/money";
import type { OrganizationRoleService } from "../../keys/organization-role-service";
import { type AccountReference, type ChangeAuthorization, webhookEventTypes } from "../../ledger/events";
import type { Session } from "../../sessions/session-tokens";
import { apiErrors, validationErrorOf } from "../api-error";
import { storableString } from "../http/storable-string";
import { handleKeyRoute } from "../keys/key-routes";
import { sessionOf } from "../middleware/authenticate-session";
import { requestIdOf } from "../middleware/request-id";
import { closedBodySchema } from "../wire/closed-object-schema";

/**
 * Alerts by signed webhooks (C14, docs/api.md): `PUT /llm/alerts`, and `/llm/webhooks` (add, list, remove,
 * deliveries, test, rotate the secret). Personal ones belong to the session's user; organization ones
 * (`isOrganization`) only owners and admins manage (403/160). An endpoint of another account is 404/120.
 */

export const alertThresholdBodySchema = closedBodySchema({
  isOrganization: z.boolean().optional(),
  balanceBelowWon: z
    .string({ error: 'must be a decimal string such as "5000", or null' })
    // abort: the checks below parse the text, and zod runs every refinement unless one aborts.
    .refine((value) => isDecimalString(value) && !value.startsWith("-"), {
      error: 'must be a decimal string ≥ 0 such as "5000"',
      abort: true,
    })
    .refine(
      (value) => parseMoney(value).decimalPlaces() <= creditDecimalPlaces,
      `must have at most ${creditDecimalPlaces} decimal places`,
    )
    .refine(
      (value) => parseMoney(value).lessThanOrEqualTo(keyLimitBounds.spendLimitWonMax),
      `must be at most ${keyLimitBounds.spendLimitWonMax}`,
    )
    .transform((value) => formatMoney(parseMoney(value)))
    .nullable(),
});

export const addWebhookBodySchema = closedBodySchema({
  url: z.string().min(1).max(webhookLimits.urlLengthMax),
  events: z.array(z.enum(webhookEventTypes)).min(1).max(webhookEventTypes.length),
  isOrganization: z.boolean().optional(),
});

/** `?isOrganization=true`: the session's organization's alerts or webhooks; else the user's. */
export const alertAccountQuerySchema = z.object({ isOrganization: z.enum(["true", "false"]).optional() });

/** Text PostgreSQL cannot store (a NUL, a lone surrogate) is refused 400/100 before the database. */
export const webhookPathSchema = z.object({ id: storableString.min(1) });

/** Whether a GET asks for the organization's alerts or webhooks (400/100 for another value). */
function isOrganizationQueried(request: Request): boolean {
  const parsed = alertAccountQuerySchema.safeParse(request.query);
  if (!parsed.success) throw validationErrorOf(parsed.error);
  return parsed.data.isOrganization === "true";
}

export function createAlertRouters(alerts: AlertService, roles: OrganizationRoleService) {
  const accountFor = async (
    response: Response,
    isOrganization: boolean | undefined,
  ): Promise<AccountReference> => {
    const session = sessionOf(response.locals);
    if (!isOrganization) return { kind: "user", id: session.userId };
    if (session.organizationId === null)
      throw apiErrors.validation("isOrganization: this session belongs to no organization");
    await roles.require(session, "manage-alerts", requestIdOf(response.locals));
    return { kind: "organization", id: session.organizationId };
  };
  const actorOf = (session: Session) => `user:${session.userId}`;
  /**
   * The role asked again in the change's turn, right before it is recorded: a change that waited behind
   * others is judged when it is made (the first ask, above, refuses before any work). What it read goes
   * into the change's metadata.
   */
  const againFor =
    (response: Response, account: AccountReference): ChangeAuthorization =>
    async () => {
      if (account.kind !== "organization") return undefined;
      return roles.authorize(sessionOf(response.locals), "manage-alerts", requestIdOf(response.locals));
    };

  const alertRouter = Router();
  alertRouter.put(
    "/",
    handle(async (request, response) => {
      const parsed = alertThresholdBodySchema.safeParse(request.body ?? {});
      if (!parsed.success) throw validationErrorOf(parsed.error);
      const account = await accountFor(response, parsed.data.isOrganization);
      const session = sessionOf(response.locals);
      await alerts.setThreshold(
        account,
        parsed.data.balanceBelowWon,
        actorOf(session),
        requestIdOf(response.locals),
        againFor(response, account),
      );
      response.json({
        isOrganization: account.kind === "organization",
        balanceBelowWon: parsed.data.balanceBelowWon,
      });
    }),
  );
  alertRouter.get(
    "/",
    handle(async (request, response) => {
      const account = await accountFor(response, isOrganizationQueried(request));
      response.json({
        isOrganization: account.kind === "organization",
        balanceBelowWon: await alerts.thresholdOf(account),
      });
    }),
  );

  const webhookRouter = Router();
  webhookRouter.post(
    "/",
    handle(async (request, response) => {
      const parsed = addWebhookBodySchema.safeParse(request.body ?? {});
      if (!parsed.success) throw validationErrorOf(parsed.error);
      const account = await accountFor(response, parsed.data.isOrganization);
      const session = sessionOf(response.locals);
      const added = await alerts.addWebhook(
        account,
        parsed.data,
        actorOf(session),
        requestIdOf(response.locals),
        againFor(response, account),
      );
      response.status(201).json(added);
    }),
  );
  webhookRouter.get(
    "/",
    handle(async (request, response) => {
      const account = await accountFor(response, isOrganizationQueried(request));
      response.json({ data: await alerts.list(account) });
    }),
  );

  /** The endpoint, when the session may manage it; else 404 (another account's is not told apart). */
  const endpointFor = async (request: Request, response: Response) => {
    const path = webhookPathSchema.safeParse(request.params);
    if (!path.success) throw validationErrorOf(path.error);
    const found = await alerts.find(path.data.id);
    const session = sessionOf(response.locals);
    const mine =
      found &&
      ((found.account.kind === "user" && found.account.id === session.userId) ||
        (found.account.kind === "organization" && found.account.id === session.organizationId));
    if (!found || !mine) throw apiErrors.notFound("Webhook not found");
    if (found.account.kind === "organization") await accountFor(response, true);
    return found;
  };
  webhookRouter.delete(
    "/:id",
    handle(async (request, response) => {
      const found = await endpointFor(request, response);
      const session = sessionOf(response.locals);
      await alerts.removeWebhook(
        found.endpoint.id,
        found.account,
        actorOf(session),
        requestIdOf(response.locals),
        againFor(response, found.account),
      );
      response.json({ id: found.endpoint.id, deleted: true });
    }),
  );
  webhookRouter.post(
    "/:id/secret",
    handle(async (request, response) => {
      const found = await endpointFor(request, response);
      const session = sessionOf(response.locals);
      const rotated = await alerts.rotateWebhookSecret(
        found.endpoint.id,
        found.account,
        actorOf(session),
        requestIdOf(response.locals),
        againFor(response, found.account),
      );
      response.json(rotated);
    }),
  );
  webhookRouter.get(
    "/:id/deliveries",
    handle(async (request, response) => {
      const found = await endpointFor(request, response);
      response.json({ data: await alerts.deliveries(found.endpoint.id) });
    }),
  );
  webhookRouter.post(
    "/:id/test",
    handle(async (request, response) => {
      const found = await endpointFor(request, response);
      const sent = await alerts.sendTest(found.endpoint.id);
      if (sent === null) throw apiErrors.testMessagesThrottled();
      response.status(202).json({ id: sent });
    }),
  );
  return { alertRouter, webhookRouter };
}

/**
 * The key routes' error mapping (404, 400 without an organization, 403/160), a refused URL as 400/100, and an
 * endpoint removed while a change to it waited as 404.
 */
function handle(work: (request: Request, response: Response) => Promise<void>) {
  const mapped = handleKeyRoute(async (request, response) => {
    try {
      await work(request, response);
    } catch (error) {
      if (error instanceof WebhookRequestError) throw apiErrors.validation(error.message);
      if (error instanceof WebhookNotFoundError) throw apiErrors.notFound("Webhook not found");
      throw error;
    }
  });
  return (request: Request, response: Response, next: NextFunction) => mapped(request, response, next);
}
