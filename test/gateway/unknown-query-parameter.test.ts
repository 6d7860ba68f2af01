import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiRoute, apiRoutes } from "../../src/gateway/openapi/api-routes";
import { buildOpenApiDocument } from "../../src/gateway/openapi/openapi-document";
import { parametersOf } from "../../src/gateway/openapi/zod-to-openapi-schema";
import { type GatewayHarness, startGatewayHarness, testSecrets } from "../support/gateway-harness";
import { servedOperations } from "../support/served-operations";

/**
 * Every query is closed, as every body is (prototype-field.test.ts): a parameter the route does not list —
 * misspelt (`isOrganisation`), from another route, or `__proto__` — is refused 400/100 naming it and the
 * route's parameters, rather than read as left out (`GET /llm/billing?isOrganisation=true` answered the
 * personal account's charges); a parameter given twice is refused saying so. The routes are those of the API
 * description (api-routes.ts): a route added there with a query is tried below once it has an accepted query
 * here, and fails while its query is open.
 *
 * Open by design: the generation endpoints (/llm/v1, where OpenAI-style clients carry parameters of their
 * own, such as `api-version`) and the operations endpoints (probes, scrapers and cache-busters); neither
 * reads a query, so nothing there can be misread.
 */

interface Reply {
  status: number;
  body: { status?: unknown; message?: unknown };
}

const owner = "query-owner";
const organization = "query-org";

let harness: GatewayHarness;
const operations = servedOperations();
let session: string;
let apiKey: string;
let keyId: string;

beforeAll(async () => {
  harness = await startGatewayHarness({
    label: "unknown_query_parameter",
    billing: {},
    service: {
      adminToken: testSecrets.adminToken,
      operationsRouter: operations.router,
    },
  });
  session = await harness.session(owner, organization);
  const issued = await harness.issueKey(session);
  apiKey = issued.key;
  keyId = issued.uuid;
  await harness.topUp({ kind: "user", id: owner }, "1000");
}, 60_000);
afterAll(async () => {
  await operations.close();
  await harness?.close();
});

const routeName = (route: ApiRoute) => `${route.method} ${route.path}`;
const takesAnyQuery = (route: ApiRoute) => route.tag === "generation" || route.tag === "operations";
const queryRoutes = apiRoutes.filter((route) => route.query !== undefined);
const noQueryRoutes = apiRoutes.filter((route) => route.query === undefined && !takesAnyQuery(route));
const openRoutes = apiRoutes.filter((route) => route.query === undefined && takesAnyQuery(route));

/**
 * A query each query-taking route of the API description accepts, by `method path` as the description writes
 * it: so the unknown parameter added to it is all that is wrong.
 */
const acceptedQueries: Record<string, string> = {
  "get /llm/models": "isOrganization=false",
  "get /llm/models/{id}": "isOrganization=false",
  "get /llm/apis": "isOrganization=true",
  "get /llm/alerts": "isOrganization=false",
  "get /llm/webhooks": "isOrganization=false",
  "get /llm/billing": "isOrganization=true&from=2026-01-01&to=2026-02-01&limit=10&order=newest",
  "get /llm/usage/activity": "isOrganization=false&limit=10&model=alpha-5.4&outcome=served&from=2026-01-01",
  "get /llm/usage": "isOrganization=false&from=2026-01-01&to=2026-01-31",
  "get /llm/billing/totals": "isOrganization=false&groupBy=day&from=2026-01-01",
  "get /llm/statements": "account=personal&month=2026-01&format=json",
  "delete /admin/discounts": "model=alpha-5.4&organizationId=query-org",
  "get /admin/billing": "account=user:someone&format=json&from=2026-01-01",
  "get /admin/activity": "account=user:someone&limit=10",
  "get /admin/billing/totals": "account=user:someone&groupBy=model",
  "get /admin/prices/history": "model=alpha-5.4&limit=5",
  "get /admin/discounts/history": "limit=5",
  "get /admin/fx-rates": "limit=5",
  "get /admin/accounts": "search=some&kind=user&limit=5",
  "get /admin/accounts/{kind}/{id}/keys": "limit=5",
  "get /admin/events": "order=desc&limit=5",
  "get /admin/statements/{kind}/{id}": "month=2026-01&format=json",
  "get /admin/exports/charges": "month=2026-01",
};

/** The route's path with its parameters filled in by values that exist: the caller's key, user, … */
function concretePath(route: ApiRoute): string {
  const values: Record<string, string> = {
    uuid: keyId,
    kind: "user",
    id: route.path.startsWith("/admin/organizations/")
      ? organization
      : route.path.includes("/models/")
        ? "alpha-5.4"
        : owner,
    slug: "alpha-5.4",
    userId: "someone",
    requestId: "req_unknown",
  };
  return route.path.replace(/\{(\w+)\}/g, (_whole, name: string) => {
    const value = values[name];
    if (value === undefined)
      throw new Error(`no value for the path parameter ${name} of ${routeName(route)}`);
    return value;
  });
}

function bearerOf(route: ApiRoute): string | undefined {
  const security = Array.isArray(route.security) ? route.security[0] : route.security;
  switch (security) {
    case "apiKey":
      return apiKey;
    case "session":
      return session;
    case "admin":
      return testSecrets.adminToken;
    case "none":
      return undefined;
    default:
      throw new Error(`no credential for ${routeName(route)} (${String(security)})`);
  }
}

async function send(route: ApiRoute, query: string, path = concretePath(route)): Promise<Reply> {
  const bearer = bearerOf(route);
  const takesBody = route.method !== "get" && route.method !== "delete";
  const response = await fetch(`${harness.url}${path}?${query}`, {
    method: route.method.toUpperCase(),
    headers: {
      "content-type": "application/json",
      ...(bearer === undefined ? {} : { authorization: `Bearer ${bearer}` }),
    },
    ...(takesBody ? { body: "{}" } : {}),
  });
  const text = await response.text();
  let body: Reply["body"] = {};
  try {
    body = JSON.parse(text) as Reply["body"];
  } catch {
    // Not JSON (metrics, a page): no refusal of ours.
  }
  return { status: response.status, body };
}

/** The query parameters the API description lists for the route, in its order. */
const parameterNamesOf = (route: ApiRoute) =>
  route.query === undefined ? [] : parametersOf(route.query, "query").map(({ name }) => name);

describe("the routes of the API description that take a query", () => {
  it("each have a query here that they accept, so that each is tried below", () => {
    expect(queryRoutes.length).toBeGreaterThan(15);
    expect(Object.keys(acceptedQueries).sort()).toEqual(queryRoutes.map(routeName).sort());
  });
});

describe("a query parameter the route does not list", () => {
  it.each(queryRoutes.map((route) => [routeName(route), route] as const))(
    "given it misspelt or named __proto__ beside an accepted query, then 400/100 naming it and the route's parameters: %s",
    async (_name, route) => {
      const accepted = acceptedQueries[routeName(route)] ?? "";
      const misspelt = await send(route, `${accepted}&misspelt=true`);
      expect({ status: misspelt.status, body: misspelt.body }).toMatchObject({
        status: 400,
        body: {
          status: 100,
          message: `misspelt: is not a parameter of this request (${parameterNamesOf(route).join(", ")})`,
        },
      });

      const prototype = await send(route, `${accepted}&__proto__=true`);
      expect({ status: prototype.status, body: prototype.body }).toEqual({
        status: 400,
        body: JSON.parse(JSON.stringify(misspelt.body).replaceAll("misspelt", "__proto__")),
      });
    },
  );

  it.each(noQueryRoutes.map((route) => [routeName(route), route] as const))(
    "given any on a route that takes none, then 400/100 naming it: %s",
    async (_name, route) => {
      const reply = await send(route, "misspelt=true");
      expect({ status: reply.status, body: reply.body }).toMatchObject({
        status: 400,
        body: { status: 100, message: "misspelt: is not a parameter of this request (it takes none)" },
      });
    },
  );

  it.each(
    openRoutes.filter((route) => route.method === "get").map((route) => [routeName(route), route] as const),
  )(
    "given any on a generation or operations endpoint, then it is not read and not refused: %s",
    async (_name, route) => {
      const reply = await send(route, "misspelt=true&api-version=2024-10-21");
      expect(String(reply.body.message ?? "")).not.toContain("is not a parameter");
      expect(reply.status).not.toBe(400);
    },
  );

  it("given a route's path as express also serves it (another case, a trailing slash), then it is refused the same", async () => {
    const billing = apiRoutes.find((route) => routeName(route) === "get /llm/billing")!;
    const reply = await send(billing, "isOrganisation=true", "/LLM/Billing/");
    expect(reply).toMatchObject({
      status: 400,
      body: { status: 100, message: expect.stringMatching(/^isOrganisation: is not a parameter/) },
    });
  });

  it('given a name left empty or a name of a page, then it is named as `""`, or by its first 100 characters', async () => {
    const balance = apiRoutes.find((route) => routeName(route) === "get /llm/balance")!;
    const unnamed = await send(balance, "=true");
    expect(unnamed.body.message).toBe('"": is not a parameter of this request (it takes none)');

    const long = await send(balance, `${"n".repeat(5_000)}=true`);
    expect(long.body.message).toBe(`${"n".repeat(100)}…: is not a parameter of this request (it takes none)`);
  });

  it("is refused, in the API description, with an error each such route documents (400, status 100)", () => {
    const document = buildOpenApiDocument({ version: "test" }) as {
      paths: Record<string, Record<string, { responses: Record<string, { description: string }> }>>;
    };
    const undocumented = [...queryRoutes, ...noQueryRoutes]
      .filter(
        (route) =>
          !document.paths[route.path]?.[route.method]?.responses["400"]?.description.includes("100:"),
      )
      .map(routeName);
    expect(undocumented).toEqual([]);
  });
});

describe("a query parameter given twice", () => {
  it.each(queryRoutes.map((route) => [routeName(route), route] as const))(
    "given one of an accepted query repeated with the same value, then 400/100 saying so, not words about its value: %s",
    async (_name, route) => {
      const accepted = acceptedQueries[routeName(route)] ?? "";
      const first = accepted.split("&")[0]!;
      const reply = await send(route, `${accepted}&${first}`);
      expect({ status: reply.status, body: reply.body }).toMatchObject({
        status: 400,
        body: { status: 100, message: `${first.split("=")[0]}: given 2 times; give it once` },
      });
    },
  );
});

describe("a finance reader's misspelt parameter", () => {
  const asSession = (path: string) =>
    fetch(`${harness.url}${path}`, { headers: { authorization: `Bearer ${session}` } });

  it("given a session's GET /llm/billing?isOrganisation=true, then 400/100 naming it, not the personal account's charges", async () => {
    const refused = await asSession("/llm/billing?isOrganisation=true");
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({
      status: 100,
      message:
        "isOrganisation: is not a parameter of this request (isOrganization, from, to, limit, cursor, order)",
    });

    // The parameter as it is spelt answers the organization's charges.
    const organizationCharges = await asSession("/llm/billing?isOrganization=true");
    expect(organizationCharges.status).toBe(200);
    expect(await organizationCharges.json()).toMatchObject({
      account: { kind: "organization", id: organization },
    });
  });
});
