import type { ApiRoute, Tag } from "./api-route";
import { parametersOf } from "./zod-to-openapi-schema";

/**
 * Which routes refuse a query parameter they do not list (middleware/refuse-unknown-query-parameters.ts),
 * and what they list: the parameters the API description shows, so the two cannot differ.
 */

/**
 * Routes that read no query and ignore one: the generation endpoints, whose OpenAI-style clients may add
 * parameters of their own (`api-version`, an SDK's default query) and were always served with them, as
 * upstream APIs serve them; and the operations endpoints, asked by probes, scrapers and viewers that may add
 * a cache-buster, with an answer that is the same for every caller. Nothing there can be misread.
 */
const queryIgnoringTags: ReadonlySet<Tag> = new Set(["generation", "operations"]);

/** Whether a parameter the route does not list is refused: every route that has a query, and every other but those above. */
export function isQueryClosed(route: ApiRoute): boolean {
  return route.query !== undefined || !queryIgnoringTags.has(route.tag);
}

/** The query parameters of the route, as its OpenAPI operation lists them, in order (none without a query). */
export function queryParameterNamesOf(route: ApiRoute): string[] {
  return route.query === undefined ? [] : parametersOf(route.query, "query").map(({ name }) => name);
}
