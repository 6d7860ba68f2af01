import { z } from "zod";
import { readLimits } from "../../kernel/limits";
import { accountBillingQuerySchema } from "../account/account-router";
import { activityQuerySchema } from "../account/activity-routes";
import { billingRangeSchema } from "../account/billing-range";
import { billingPageQuerySchema, billingTotalsQuerySchema } from "../account/billing-read-schemas";
import { usageQuerySchema } from "../account/usage-routes";
import { adminActivityQuerySchema } from "../admin/activity-routes";
import {
  accountPathSchema,
  billingQuerySchema,
  creditBodySchema,
  creditHeadersSchema,
  discountBodySchema,
  discountHistoryQuerySchema,
  discountScopeQuerySchema,
  eventsQuerySchema,
  fxRateBodySchema,
  fxRateHistoryQuerySchema,
  modelPathSchema,
  modelPriceBodySchema,
  priceHistoryQuerySchema,
} from "../admin/admin-request-schemas";
import { organizationPathSchema } from "../admin/key-limits-routes";
import { accountKeysQuerySchema, accountsQuerySchema } from "../admin/read-routes";
import { adminIssueKeyBodySchema, signInLinkBodySchema } from "../admin/user-access-routes";
import {
  addWebhookBodySchema,
  alertAccountQuerySchema,
  alertThresholdBodySchema,
  webhookPathSchema,
} from "../alerts/alert-routes";
import { keyLimitsBodySchema, organizationKeyDefaultsBodySchema } from "../keys/key-limits-bodies";
import { issueKeyBodySchema, keyStatusBodySchema, listKeysQuerySchema } from "../keys/key-routes";
import { memberPathSchema, memberRoleBodySchema } from "../keys/organization-member-routes";
import { playgroundKeyBodySchema } from "../keys/playground-routes";
import { modelIdPathSchema, modelsQuerySchema } from "../models/model-routes";
import { mintSessionBodySchema } from "../sessions/admin-session-routes";
import { chatCompletionsRequestSchema } from "../wire/chat-completions-request";
import { responsesRequestSchema } from "../wire/responses-request";
import type { ApiRoute, Security, Tag } from "./api-route";
import * as bodies from "./response-schemas";
import { statementAndReceiptRoutes } from "./statement-api-routes";

/**
 * Every route the gateway serves, as the API description lists it: who may call it, what it takes (the
 * zod schemas the route validates with) and what it answers, errors included by application code.
 */

export type { ApiRoute, ApplicationErrorCode, Security, Tag } from "./api-route";

import type { ApplicationErrorCode } from "./api-route";

const json = (description: string, schema: z.ZodType) => ({ description, schema });
const keyPath = z.object({ uuid: z.uuid() });

const generation = (path: string, summary: string, body: z.ZodType, answer: z.ZodType): ApiRoute => ({
  method: "post",
  path,
  tag: "generation",
  summary,
  security: "apiKey",
  body,
  responses: {
    200: {
      description: `${summary}: JSON, or with "stream": true server-sent events ending in "data: [DONE]"`,
      schema: answer,
    },
  },
  errors: [100, 110, 120, 130, 140, 150, 300, 400, 401],
  ledgerUnavailable: true,
});

/**
 * Read, replace and clear a key's limits. Enforced when a request's hold is placed: a key over its rate
 * limit is refused with 429/130 and `Retry-After`, over a spend limit with 400/140, the message naming the
 * limit and its value. A model outside its allowed models is refused before the hold, 403/150.
 */
function keyLimitsRoutes(path: string, tag: Tag, security: Security, whose: string): ApiRoute[] {
  const answer = { 200: json("The key's limits and its spend", bodies.keyLimitsSchema) };
  // A session's organization keys: only its owners and admins change their limits (C14).
  const roleRefusal: ApplicationErrorCode[] = security === "session" ? [160] : [];
  return [
    {
      method: "get",
      path,
      tag,
      summary: `The limits of ${whose}, with its spend this Asia/Seoul month and in total`,
      security,
      pathParameters: keyPath,
      responses: answer,
      errors: [100, 110, 120],
    },
    {
      method: "put",
      path,
      tag,
      summary: `Replace the limits of ${whose} (a field left out or null is no limit)`,
      security,
      pathParameters: keyPath,
      body: keyLimitsBodySchema,
      responses: answer,
      errors: [100, 110, 120, ...roleRefusal],
      ledgerUnavailable: true,
    },
    {
      method: "delete",
      path,
      tag,
      summary: `Clear every limit of ${whose}`,
      security,
      pathParameters: keyPath,
      responses: answer,
      errors: [100, 110, 120, ...roleRefusal],
      ledgerUnavailable: true,
    },
  ];
}

/** Read and replace an organization's defaults for its new keys: the models they may call. */
function organizationKeyDefaultsRoutes(
  path: string,
  tag: Tag,
  security: Security,
  pathParameters: z.ZodType | undefined,
  whose: string,
): ApiRoute[] {
  const answer = { 200: json("The organization's key defaults", bodies.organizationKeyDefaultsSchema) };
  const parameters = pathParameters ? { pathParameters } : {};
  return [
    {
      method: "get",
      path,
      tag,
      summary: `The models ${whose} keys issued from now on may call`,
      security,
      ...parameters,
      responses: answer,
      errors: [100, 110],
    },
    {
      method: "put",
      path,
      tag,
      summary: `Set the models ${whose} keys issued from now on may call (null: every model); keys issued before keep theirs`,
      security,
      ...parameters,
      body: organizationKeyDefaultsBodySchema,
      responses: answer,
      errors: security === "session" ? [100, 110, 160] : [100, 110],
      ledgerUnavailable: true,
    },
  ];
}

/** Roles in an organization (C14, docs/api.md "Roles in an organization"). */
const webhookPath = "/llm/webhooks/{id}";

/** Alerts by signed webhooks (C14): personal, or the organization's (owners and admins: 403/160). */
const alertRoutes: ApiRoute[] = [
  {
    method: "put",
    path: "/llm/alerts",
    tag: "account",
    summary:
      "Set the low-funds threshold of the session's user (or, with isOrganization, its organization's: owners and admins); null clears it",
    security: "session",
    body: alertThresholdBodySchema,
    responses: { 200: json("The threshold in force", bodies.alertThresholdSchema) },
    errors: [100, 110, 160],
    ledgerUnavailable: true,
  },
  {
    method: "get",
    path: "/llm/alerts",
    tag: "account",
    summary: "The low-funds threshold of the session's user (its organization's with isOrganization=true)",
    security: "session",
    query: alertAccountQuerySchema,
    responses: { 200: json("The threshold in force", bodies.alertThresholdSchema) },
    errors: [100, 110, 160],
  },
  {
    method: "post",
    path: "/llm/webhooks",
    tag: "account",
    summary:
      "Add a webhook endpoint for balance.low, key.limit_reached or statement.closed; its signing secret is answered once. A URL on a loopback, private or link-local address is 400/100",
    security: "session",
    body: addWebhookBodySchema,
    responses: { 201: json("The endpoint, with its secret", bodies.addedWebhookSchema) },
    errors: [100, 110, 160],
    ledgerUnavailable: true,
  },
  {
    method: "get",
    path: "/llm/webhooks",
    tag: "account",
    summary: "The webhook endpoints of the session's user (its organization's with isOrganization=true)",
    security: "session",
    query: alertAccountQuerySchema,
    responses: { 200: json("The endpoints, without secrets", bodies.webhookListSchema) },
    errors: [100, 110, 160],
  },
  {
    method: "delete",
    path: webhookPath,
    tag: "account",
    summary: "Remove a webhook endpoint; its pending messages are not sent",
    security: "session",
    pathParameters: webhookPathSchema,
    responses: { 200: json("Removed", bodies.webhookRemovedSchema) },
    errors: [100, 110, 120, 160],
    ledgerUnavailable: true,
  },
  {
    method: "post",
    path: `${webhookPath}/secret`,
    tag: "account",
    summary:
      "Rotate the endpoint's signing secret: the new one is answered once; for 24 hours every delivery is signed with it and with the one it replaced (two v1 signatures, new first), then with it alone",
    security: "session",
    pathParameters: webhookPathSchema,
    responses: { 200: json("The new secret", bodies.rotatedWebhookSecretSchema) },
    errors: [100, 110, 120, 160],
    ledgerUnavailable: true,
  },
  {
    method: "get",
    path: `${webhookPath}/deliveries`,
    tag: "account",
    summary: "The endpoint's delivery log: status, attempts, next try and last answer of each message",
    security: "session",
    pathParameters: webhookPathSchema,
    responses: { 200: json("The deliveries", bodies.webhookDeliveriesSchema) },
    errors: [100, 110, 120, 160],
  },
  {
    method: "post",
    path: `${webhookPath}/test`,
    tag: "account",
    summary: "Send the endpoint a webhook.test message (signed and retried like any other)",
    security: "session",
    pathParameters: webhookPathSchema,
    responses: { 202: json("Queued", bodies.webhookTestSchema) },
    errors: [100, 110, 120, 130, 160],
  },
];

const organizationMemberRoutes: ApiRoute[] = [
  {
    method: "get",
    path: "/llm/organization/members",
    tag: "account",
    summary:
      "The session's organization's members with their roles, and the session's own role and what it may do (any member)",
    security: "session",
    responses: { 200: json("The members", bodies.organizationMembersSchema) },
    errors: [100, 110],
  },
  {
    method: "put",
    path: "/llm/organization/members/{userId}",
    tag: "account",
    summary:
      "Give a user a role in the session's organization: owners and admins grant; only an owner makes owners or changes an owner's role; the last owner stays",
    security: "session",
    pathParameters: memberPathSchema,
    body: memberRoleBodySchema,
    responses: { 200: json("The member with the role", bodies.organizationMemberSchema) },
    errors: [100, 110, 160],
    ledgerUnavailable: true,
  },
];

export const apiRoutes: readonly ApiRoute[] = [
  {
    method: "get",
    path: "/llm/v1/models",
    tag: "generation",
    summary:
      "List the models the key may call (its allowed models), each with its price for the key in won per million tokens",
    security: "apiKey",
    responses: { 200: json("The model list", bodies.modelListSchema) },
    errors: [110],
  },
  {
    method: "get",
    path: "/llm/v1/models/{id}",
    tag: "generation",
    summary: "One model; a model the key may not call is not found, as it is not in the key's list",
    security: "apiKey",
    pathParameters: z.object({ id: z.string() }),
    responses: { 200: json("The model", bodies.modelSchema) },
    errors: [110, 120],
  },
  {
    method: "get",
    path: "/llm/models",
    tag: "account",
    summary: "The models and their prices for the session (its organization's with isOrganization=true)",
    security: "session",
    query: modelsQuerySchema,
    responses: { 200: json("The model list", bodies.modelListSchema) },
    errors: [100, 110],
  },
  {
    method: "get",
    path: "/llm/models/{id}",
    tag: "account",
    summary: "One model and its price for the session",
    security: "session",
    pathParameters: modelIdPathSchema,
    query: modelsQuerySchema,
    responses: { 200: json("The model", bodies.modelSchema) },
    errors: [100, 110, 120],
  },
  generation(
    "/llm/v1/chat/completions",
    "Chat completion",
    chatCompletionsRequestSchema,
    bodies.chatCompletionSchema,
  ),
  generation("/llm/v1/responses", "Response", responsesRequestSchema, bodies.responseSchema),

  {
    method: "get",
    path: "/llm/apis",
    tag: "keys",
    summary: "List the caller's personal or organization keys, newest first",
    security: "session",
    query: listKeysQuerySchema,
    responses: { 200: json("Keys, without their values", bodies.keyListSchema) },
    errors: [100, 110],
  },
  {
    method: "post",
    path: "/llm/apis",
    tag: "keys",
    summary: "Issue a key; its value is shown only in this response",
    security: "session",
    body: issueKeyBodySchema,
    responses: { 201: json("The issued key with its value", bodies.issuedKeySchema) },
    errors: [100, 110],
    ledgerUnavailable: true,
  },
  {
    method: "patch",
    path: "/llm/apis/{uuid}/status",
    tag: "keys",
    summary: "Activate (1) or deactivate (0) a key",
    security: "session",
    pathParameters: keyPath,
    body: keyStatusBodySchema,
    responses: { 200: json("The key's new status", bodies.keyStatusSchema) },
    errors: [100, 110, 120],
    ledgerUnavailable: true,
  },
  {
    method: "delete",
    path: "/llm/apis/{uuid}",
    tag: "keys",
    summary: "Delete a key; it never authenticates again",
    security: "session",
    pathParameters: keyPath,
    responses: { 200: json("Deleted", bodies.keyDeletedSchema) },
    errors: [100, 110, 120],
    ledgerUnavailable: true,
  },

  ...keyLimitsRoutes("/llm/apis/{uuid}/limits", "keys", "session", "the session's own key"),
  ...organizationKeyDefaultsRoutes(
    "/llm/organization/key-defaults",
    "keys",
    "session",
    undefined,
    "the session's organization's",
  ),

  ...organizationMemberRoutes,
  ...alertRoutes,

  {
    method: "get",
    path: "/llm/balance",
    tag: "account",
    summary: "The session's user balance and its organization's",
    security: "session",
    responses: { 200: json("Balances in won", bodies.balanceSchema) },
    errors: [110],
  },
  {
    method: "get",
    path: "/llm/billing",
    tag: "account",
    summary:
      "The caller's charges with their breakdown, in the order the requests started: the whole range, or one page with limit/cursor/order",
    security: "session",
    query: z.object({
      ...accountBillingQuerySchema.shape,
      ...billingRangeSchema.shape,
      ...billingPageQuerySchema.shape,
    }),
    responses: {
      200: json(
        "Charges; with limit, cursor or order one page and nextCursor",
        z.union([bodies.billingHistorySchema, bodies.billingPageSchema]),
      ),
    },
    errors: [100, 110],
  },
  {
    method: "post",
    path: "/llm/playground/key",
    tag: "keys",
    summary:
      "A fresh API key for the console's playground (replacing this user's previous one on the account); use it on /llm/v1",
    security: "session",
    body: playgroundKeyBodySchema,
    responses: {
      201: json("The key, shown once, and the base URL to use it on", bodies.playgroundKeySchema),
    },
    errors: [100, 110],
    ledgerUnavailable: true,
  },
  {
    method: "get",
    path: "/llm/usage/activity",
    tag: "account",
    summary:
      "The caller's generation requests (served, refused, failed, cut), newest first, a page at a time; filter by model, keyId, status, outcome, from and to",
    security: "session",
    query: z.object({
      ...accountBillingQuerySchema.shape,
      ...billingRangeSchema.shape,
      ...activityQuerySchema.shape,
    }),
    responses: { 200: json("One page of requests, with nextCursor", bodies.activityPageSchema) },
    errors: [100, 110],
  },
  {
    method: "get",
    path: "/llm/usage",
    tag: "account",
    summary:
      "The caller's charged usage per Seoul day, model and key (a member who is neither owner nor admin: the organization keys they issued)",
    security: "session",
    query: usageQuerySchema,
    responses: { 200: json("Rows of requests, won and tokens", bodies.usageByDaySchema) },
    errors: [100, 110],
  },
  {
    method: "get",
    path: "/llm/billing/totals",
    tag: "account",
    summary: "Totals of the caller's charges by Seoul day, model or key",
    security: "session",
    query: z.object({
      ...accountBillingQuerySchema.shape,
      ...billingRangeSchema.shape,
      ...billingTotalsQuerySchema.shape,
    }),
    responses: { 200: json("Exact sums per group and overall", bodies.billingTotalsSchema) },
    errors: [100, 110],
  },

  {
    method: "post",
    path: "/admin/sessions",
    tag: "admin",
    summary: "Mint a session token",
    security: "admin",
    body: mintSessionBodySchema,
    responses: { 201: json("The session token", bodies.sessionSchema) },
    errors: [100, 110],
  },
  {
    method: "post",
    path: "/admin/accounts/{kind}/{id}/credits",
    tag: "admin",
    summary: "Top up an account",
    security: "admin",
    pathParameters: accountPathSchema,
    headers: creditHeadersSchema,
    body: creditBodySchema,
    responses: { 201: json("The balance once the top-up is applied", bodies.creditedSchema) },
    errors: [100, 110],
    ledgerUnavailable: true,
  },
  {
    method: "get",
    path: "/admin/accounts/{kind}/{id}",
    tag: "admin",
    summary:
      "An account's balance, its usage recorded but not charged yet, what requests in flight hold, and the pending usage nothing prices",
    security: "admin",
    pathParameters: accountPathSchema,
    responses: { 200: json("The account", bodies.accountViewSchema) },
    errors: [100, 110],
  },
  ...keyLimitsRoutes("/admin/keys/{uuid}/limits", "admin", "admin", "any key"),
  ...organizationKeyDefaultsRoutes(
    "/admin/organizations/{id}/key-defaults",
    "admin",
    "admin",
    organizationPathSchema,
    "any organization's",
  ),
  {
    method: "put",
    path: "/admin/models/{slug}/price",
    tag: "admin",
    summary: "Set a model's prices in USD per 1M tokens",
    security: "admin",
    pathParameters: modelPathSchema,
    body: modelPriceBodySchema,
    responses: { 200: json("The prices now in force", bodies.modelPriceSchema) },
    errors: [100, 110, 120],
    ledgerUnavailable: true,
  },
  {
    method: "put",
    path: "/admin/discounts",
    tag: "admin",
    summary: "Set a discount rule (model or any, organization or any)",
    security: "admin",
    body: discountBodySchema,
    responses: { 200: json("The rule now in force", bodies.discountSchema) },
    errors: [100, 110, 120],
    ledgerUnavailable: true,
  },
  {
    method: "delete",
    path: "/admin/discounts",
    tag: "admin",
    summary:
      "Remove the discount rule of a scope (a parameter left out: any), so a less specific one applies again",
    security: "admin",
    query: discountScopeQuerySchema,
    responses: { 200: json("The scope's rule ended", bodies.discountRemovedSchema) },
    errors: [100, 110, 120],
    ledgerUnavailable: true,
  },
  {
    method: "post",
    path: "/admin/fx-rates",
    tag: "admin",
    summary: "Record a USD/KRW rate",
    security: "admin",
    body: fxRateBodySchema,
    responses: { 201: json("The recorded rate", bodies.fxRateRecordedSchema) },
    errors: [100, 110],
    ledgerUnavailable: true,
  },
  {
    method: "post",
    path: "/admin/fx-rates/refresh",
    tag: "admin",
    summary: "Fetch today's rate from the bank now",
    security: "admin",
    responses: {
      200: json("Today's rate was already recorded", bodies.fxRateRefreshedSchema),
      201: json("The rate fetched and recorded", bodies.fxRateRefreshedSchema),
    },
    errors: [110, 300],
    ledgerUnavailable: true,
  },
  {
    method: "get",
    path: "/admin/fx-rates",
    tag: "admin",
    summary:
      "FX rate history, newest first, a page at a time: every rate (up to 10,000) unless limit says fewer; pass nextCursor back as cursor for the next page",
    security: "admin",
    query: fxRateHistoryQuerySchema,
    responses: { 200: json("A page of rates, with nextCursor", bodies.fxRateHistorySchema) },
    errors: [100, 110],
  },
  {
    method: "get",
    path: "/admin/billing",
    tag: "admin",
    summary:
      "An account's charges with their breakdown, as JSON or CSV; one JSON page with limit/cursor/order (with format=csv: 400/100)",
    security: "admin",
    query: z.object({
      ...billingQuerySchema.shape,
      ...billingRangeSchema.shape,
      ...billingPageQuerySchema.shape,
    }),
    responses: {
      200: {
        description:
          "Charges (JSON below; CSV with format=csv); with limit, cursor or order one page and nextCursor",
        schema: z.union([bodies.billingHistorySchema, bodies.billingPageSchema]),
      },
    },
    errors: [100, 110],
  },
  {
    method: "post",
    path: "/admin/sign-in-links",
    tag: "admin",
    summary: "A one-time console sign-in link for a user (single use, valid for minutes)",
    security: "admin",
    body: signInLinkBodySchema,
    responses: { 201: json("The link", bodies.signInLinkSchema) },
    errors: [100, 110],
  },
  {
    method: "post",
    path: "/admin/keys",
    tag: "admin",
    summary: "Issue a key for a user or an organization (its event records the admin as actor)",
    security: "admin",
    body: adminIssueKeyBodySchema,
    responses: { 201: json("The key, shown once", bodies.issuedKeySchema) },
    errors: [100, 110],
    ledgerUnavailable: true,
  },
  {
    method: "get",
    path: "/admin/activity",
    tag: "admin",
    summary:
      "An account's generation requests, as GET /llm/usage/activity answers them for the session's own",
    security: "admin",
    query: z.object({
      ...adminActivityQuerySchema.shape,
      ...billingRangeSchema.shape,
      ...activityQuerySchema.shape,
    }),
    responses: { 200: json("One page of requests, with nextCursor", bodies.activityPageSchema) },
    errors: [100, 110],
  },
  {
    method: "get",
    path: "/admin/billing/totals",
    tag: "admin",
    summary: "Totals of an account's charges by Seoul day, model or key",
    security: "admin",
    query: z.object({
      ...billingQuerySchema.pick({ account: true }).shape,
      ...billingRangeSchema.shape,
      ...billingTotalsQuerySchema.shape,
    }),
    responses: { 200: json("Exact sums per group and overall", bodies.billingTotalsSchema) },
    errors: [100, 110],
  },
  {
    method: "get",
    path: "/admin/prices",
    tag: "admin",
    summary: "Every model with the prices in force",
    security: "admin",
    responses: { 200: json("Prices in USD per 1M tokens", bodies.pricesSchema) },
    errors: [110],
  },
  {
    method: "get",
    path: "/admin/discounts",
    tag: "admin",
    summary: "The discount rules in force, one per scope",
    security: "admin",
    responses: { 200: json("Rules", bodies.discountsSchema) },
    errors: [110],
  },
  {
    method: "get",
    path: "/admin/prices/history",
    tag: "admin",
    summary:
      "Every price change of a model (or of all models), who made it and when, newest first, a page at a time; pass nextCursor back as cursor for the next page",
    security: "admin",
    query: priceHistoryQuerySchema,
    responses: {
      200: json("A page of price changes in USD per 1M tokens, with nextCursor", bodies.priceHistorySchema),
    },
    errors: [100, 110, 120],
  },
  {
    method: "get",
    path: "/admin/discounts/history",
    tag: "admin",
    summary:
      "Every discount change of every scope, who made it and when, newest first, a page at a time; pass nextCursor back as cursor for the next page",
    security: "admin",
    query: discountHistoryQuerySchema,
    responses: { 200: json("A page of discount changes, with nextCursor", bodies.discountHistorySchema) },
    errors: [100, 110],
  },
  {
    method: "get",
    path: "/admin/accounts",
    tag: "admin",
    summary: "Accounts whose id contains `search`, with balance and pending usage count, a page at a time",
    security: "admin",
    query: accountsQuerySchema,
    responses: { 200: json("A page of accounts", bodies.accountsPageSchema) },
    errors: [100, 110],
  },
  {
    method: "get",
    path: "/admin/accounts/{kind}/{id}/keys",
    tag: "admin",
    summary: "The keys an account owns, newest first, a page at a time",
    security: "admin",
    pathParameters: accountPathSchema,
    query: accountKeysQuerySchema,
    responses: { 200: json("Keys, without their values", bodies.accountKeysSchema) },
    errors: [100, 110],
  },
  {
    method: "get",
    path: "/admin/events",
    tag: "admin",
    summary:
      "The raw ledger a page at a time: in log order (after; after=0 is the start), or newest first (order=desc or before); filter by stream and type",
    security: "admin",
    query: eventsQuerySchema,
    responses: { 200: json("A page of events", bodies.eventsPageSchema) },
    errors: [100, 110],
  },

  {
    method: "get",
    path: "/admin/upstreams",
    tag: "admin",
    summary:
      "Each upstream endpoint's breaker, load and recent failure rate, as this gateway process sees it",
    security: "admin",
    responses: { 200: json("Upstream endpoints by name (never URL or key)", bodies.upstreamHealthSchema) },
    errors: [110],
  },
  {
    method: "get",
    path: "/admin/ledger/status",
    tag: "admin",
    summary: "The latest signed checkpoint, its own checks and the events not sealed yet (constant cost)",
    security: "admin",
    responses: { 200: json("Integrity at a glance", bodies.ledgerStatusSchema) },
    errors: [110],
  },
  {
    method: "post",
    path: "/admin/ledger/verify",
    tag: "admin",
    summary: `Verify every hash chain and checkpoint now (a log of at most ${readLimits.ledgerVerifyOnDemandEventsMax} events; else the CLI)`,
    security: "admin",
    responses: { 200: json("The verification, or why it was not run here", bodies.ledgerVerificationSchema) },
    errors: [110],
  },

  {
    method: "get",
    path: "/health/live",
    tag: "operations",
    summary: "Liveness: 200 while the process runs",
    security: "none",
    responses: { 200: json("Alive", bodies.liveSchema) },
    errors: [],
  },
  {
    method: "get",
    path: "/health/ready",
    tag: "operations",
    summary: "Readiness: PostgreSQL, the queue and the projections usable, not draining",
    security: "none",
    responses: {
      200: json("Ready", bodies.readinessSchema),
      503: json("Not ready; `failing` names the parts", bodies.readinessSchema),
    },
    errors: [],
  },
  ...(
    [
      ["prices", "The price in force per catalog model", bodies.consolePricesSchema],
      ["discounts", "The discount rule in force per scope", bodies.consoleDiscountsSchema],
    ] as const
  ).map(
    ([name, summary, schema]): ApiRoute => ({
      method: "get",
      path: `/admin/console/${name}`,
      tag: "admin",
      summary: `For the console: ${summary.charAt(0).toLowerCase()}${summary.slice(1)}`,
      security: "admin",
      responses: { 200: json(summary, schema) },
      errors: [110],
    }),
  ),
  {
    method: "get",
    path: "/healthz",
    tag: "operations",
    summary: "Deprecated: /health/live under its old name, checks nothing",
    security: "none",
    responses: { 200: json("Alive", bodies.liveSchema) },
    errors: [],
  },
  {
    method: "get",
    path: "/metrics",
    tag: "operations",
    summary: "Prometheus metrics",
    security: "none",
    responses: {
      200: {
        description: "Prometheus text exposition format 0.0.4",
        contentType: "text/plain",
        schema: z.string(),
      },
    },
    errors: [],
  },
  {
    method: "get",
    path: "/openapi.json",
    tag: "operations",
    summary: "This document",
    security: "none",
    responses: { 200: json("OpenAPI 3.1", z.record(z.string(), z.unknown())) },
    errors: [],
  },
  {
    method: "get",
    path: "/docs",
    tag: "operations",
    summary: "A page that renders this document",
    security: "none",
    responses: { 200: { description: "HTML", contentType: "text/html", schema: z.string() } },
    errors: [],
  },
  ...statementAndReceiptRoutes,
];
