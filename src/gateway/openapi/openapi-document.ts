import type { z } from "zod";
import { type ApiRoute, type ApplicationErrorCode, apiRoutes, type Security } from "./api-routes";
import { errorBodySchema, webhookMessageSchemas } from "./response-schemas";
import { isQueryClosed } from "./route-query";
import { type JsonSchema, jsonSchemaOf, parametersOf } from "./zod-to-openapi-schema";

/**
 * The OpenAPI 3.1 document of the whole API (C11), built once from the route table and the zod schemas
 * the routes validate with.
 */

const errorMeanings: Record<ApplicationErrorCode, { httpStatus: number; meaning: string }> = {
  100: { httpStatus: 400, meaning: "100: request value validation error" },
  110: { httpStatus: 401, meaning: "110: missing or invalid credentials" },
  120: { httpStatus: 404, meaning: "120: target not found" },
  130: {
    httpStatus: 429,
    meaning:
      "130: the key reached its rate limit, or a webhook endpoint has 5 test messages waiting; `Retry-After` gives the whole seconds to wait",
  },
  140: {
    httpStatus: 400,
    meaning: "140: the key reached a spend limit (monthly: the message says when it resets)",
  },
  150: {
    httpStatus: 403,
    meaning:
      "150: the key may not call this model (its allowed models); nothing is held, GET /llm/v1/models lists what it may call",
  },
  160: {
    httpStatus: 403,
    meaning:
      "160: the session's role in its organization may not do this (owners and admins may; only an owner makes owners; the last owner stays)",
  },
  300: { httpStatus: 400, meaning: "300: the upstream rejected the request (500: it failed)" },
  400: {
    httpStatus: 400,
    meaning: "400: organization credit insufficient",
  },
  401: {
    httpStatus: 400,
    meaning: "401: user credit insufficient",
  },
};

const securitySchemes = {
  apiKey: { type: "http", scheme: "bearer", description: "An API key, `svc_…`" },
  session: {
    type: "http",
    scheme: "bearer",
    bearerFormat: "JWT",
    description: "A session token (or cookie `session`)",
  },
  admin: { type: "http", scheme: "bearer", description: "ADMIN_TOKEN" },
} as const;

function content(schema: z.ZodType, contentType = "application/json") {
  return { [contentType]: { schema: jsonSchemaOf(schema, "output") } };
}

function errorResponses(route: ApiRoute): Record<string, unknown> {
  const byStatus = new Map<number, string[]>();
  const add = (httpStatus: number, meaning: string) =>
    byStatus.set(httpStatus, [...(byStatus.get(httpStatus) ?? []), meaning]);
  for (const code of errorsOf(route)) add(errorMeanings[code].httpStatus, errorMeanings[code].meaning);
  if (route.errors.includes(300) && route.tag === "generation") {
    add(500, "300: the upstream failed, after every attempt (C13)");
    add(429, "300: the upstream is rate limiting, after every attempt; see Retry-After (C13)");
  }
  if (route.ledgerUnavailable) {
    add(503, "300: the ledger is unavailable (fail closed)");
    if (route.method !== "get" && route.tag !== "generation")
      add(503, "300: the write was recorded, but its read models are behind (x-should-retry: false)");
  }
  return Object.fromEntries(
    [...byStatus].map(([httpStatus, meanings]) => [
      String(httpStatus),
      { description: `Error body; status ${meanings.join("; ")}`, content: content(errorBodySchema) },
    ]),
  );
}

/** The route's errors, with 400/100 wherever a query parameter it does not list is refused. */
function errorsOf(route: ApiRoute): ApplicationErrorCode[] {
  return isQueryClosed(route) && !route.errors.includes(100) ? [100, ...route.errors] : route.errors;
}

function operationOf(route: ApiRoute) {
  const parameters = [
    ...(route.pathParameters ? parametersOf(route.pathParameters, "path") : []),
    ...(route.query ? parametersOf(route.query, "query") : []),
    ...(route.headers ? parametersOf(route.headers, "header") : []),
  ];
  const responses = Object.fromEntries(
    Object.entries(route.responses).map(([httpStatus, response]) => [
      httpStatus,
      {
        description: response.description,
        ...(response.schema ? { content: content(response.schema, response.contentType) } : {}),
      },
    ]),
  );
  return {
    operationId: operationIdOf(route),
    tags: [route.tag],
    summary: route.summary,
    security: securityOf(route.security),
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(route.body
      ? {
          requestBody: {
            required: true,
            content: { "application/json": { schema: jsonSchemaOf(route.body, "input") as JsonSchema } },
          },
        }
      : {}),
    responses: { ...responses, ...errorResponses(route) },
  };
}

/** One scheme, or any one of several (a receipt: the key that made the request, or a session). */
function securityOf(security: Security | readonly Security[]): Record<string, string[]>[] {
  if (typeof security !== "string") return security.flatMap(securityOf);
  return security === "none" ? [] : [{ [security]: [] }];
}

function operationIdOf(route: ApiRoute): string {
  const words = `${route.method} ${route.path}`
    .replace(/[{}]/g, "")
    .split(/[^A-Za-z0-9]+/)
    .filter((word) => word !== "");
  return words.map((word, index) => (index === 0 ? word : word[0]!.toUpperCase() + word.slice(1))).join("");
}

export function buildOpenApiDocument(options: { version: string }): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of apiRoutes) {
    paths[route.path] ??= {};
    paths[route.path]![route.method] = operationOf(route);
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "won-gateway",
      version: options.version,
      description:
        "Text-generation gateway speaking chat completions and responses, billed in Korean won. " +
        "Money is a decimal string everywhere. Errors are `{ status, message }` with an application code. " +
        "Bodies and queries are closed: a body field or a query parameter an operation does not list is refused " +
        "400/100 naming it (the generation and operations endpoints ignore a query).",
    },
    tags: [
      { name: "generation", description: "Base URL …/llm/v1, API key" },
      { name: "keys", description: "Key management, session" },
      { name: "account", description: "The session's balance and billing" },
      { name: "admin", description: "Admin API, ADMIN_TOKEN" },
      { name: "operations", description: "Health, metrics, this description" },
    ],
    paths,
    webhooks: webhooksOf(),
    components: { securitySchemes },
  };
}

/**
 * What a webhook endpoint receives (OpenAPI 3.1 `webhooks`): each message type's body, signed with the Standard
 * Webhooks headers (docs/api.md says how to verify them).
 */
function webhooksOf(): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(webhookMessageSchemas).map(([type, schema]) => [
      type,
      {
        post: {
          summary: type,
          description:
            "Signed with the headers webhook-id (the same on every retry), webhook-timestamp and webhook-signature",
          requestBody: {
            required: true,
            content: { "application/json": { schema: jsonSchemaOf(schema, "output") } },
          },
          responses: {
            "200": { description: "Any 2xx acknowledges the message; anything else is retried for 24 hours" },
          },
        },
      },
    ]),
  );
}
