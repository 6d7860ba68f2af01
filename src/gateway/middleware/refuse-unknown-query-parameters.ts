import type { RequestHandler } from "express";
import type { z } from "zod";
import { apiErrors, validationErrorOf } from "../api-error";
import type { ApiRoute } from "../openapi/api-route";
import { isQueryClosed, queryParameterNamesOf } from "../openapi/route-query";
import { closedQuerySchema } from "../wire/closed-object-schema";

/**
 * Every route's query is closed, as its body is: a parameter the route does not list — misspelt
 * (`GET /llm/billing?isOrganisation=true`, which read as left out answered the personal account's charges),
 * from another route, or `__proto__` — is refused 400/100 naming it and the route's parameters, and one given
 * twice is refused saying so; nothing is read or done. What a route lists is what the API description shows (src/gateway/openapi/api-routes.ts);
 * the route's own schema reads the values. The generation and operations endpoints ignore a query
 * (openapi/route-query.ts).
 *
 * One check before the routers, so before authentication, as the body's parsing is: which parameters a
 * route takes is no secret (`/openapi.json`).
 */
export function refuseUnknownQueryParameters(routes: readonly ApiRoute[]): RequestHandler {
  const closed = routes.filter(isQueryClosed).map((route) => ({
    method: route.method,
    path: pathPatternOf(route.path),
    query: closedQuerySchema(queryParameterNamesOf(route)),
  }));
  return (request, _response, next) => {
    // Express answers HEAD with a GET route.
    const method = request.method === "HEAD" ? "get" : request.method.toLowerCase();
    const route = closed.find(
      (candidate) => candidate.method === method && candidate.path.test(request.path),
    );
    const parsed = route?.query.safeParse(request.query);
    next(parsed === undefined || parsed.success ? undefined : refusalOf(parsed.error));
  };
}

/**
 * An OpenAPI path as express matches it: each `{parameter}` one segment, letters in either case (express
 * routes case-insensitively), with or without a trailing slash.
 */
function pathPatternOf(path: string): RegExp {
  const literals = path.split(/\{\w+\}/).map((literal) => literal.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  return new RegExp(`^${literals.join("[^/]+")}/?$`, "i");
}

/** The parameter named, as much of it as is shown, with the route's parameters; a name is the client's text. */
function refusalOf(error: z.ZodError) {
  const unknown = error.issues.find((issue) => issue.code === "unrecognized_keys");
  if (unknown === undefined) return validationErrorOf(error);
  return apiErrors.validation(`${shownParameterName(unknown.keys[0] ?? "")}: ${unknown.message}`);
}

/** A parameter's name is the client's text: enough of it to recognise, not a page of it echoed back. */
const parameterNameShownMax = 100;

/** A parameter's name as a refusal names it: at most 100 characters, and `""` for a name left empty (`?=x`). */
function shownParameterName(name: string): string {
  if (name === "") return '""';
  return name.length > parameterNameShownMax ? `${name.slice(0, parameterNameShownMax)}…` : name;
}
