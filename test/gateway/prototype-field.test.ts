import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiRoute, apiRoutes } from "../../src/gateway/openapi/api-routes";
import { type GatewayHarness, startGatewayHarness, testSecrets } from "../support/gateway-harness";

/**
 * Every request body is closed: a field it does not have — misspelt (`referense` on a top-up), unknown, or
 * `__proto__` (an own field once JSON.parse has read it) — is refused 400/100 naming it, and nothing is done,
 * rather than dropped unread. The body-taking routes are those of the API description (api-routes.ts), so a
 * route added there with no accepted body here fails the first test; the console's own two are added by hand.
 */

interface Reply {
  status: number;
  body: { status?: unknown; message?: unknown };
}

const owner = "proto-owner";
const organization = "proto-org";

let harness: GatewayHarness;
let session: string;
let apiKey: string;
let keyId: string;

beforeAll(async () => {
  harness = await startGatewayHarness({
    label: "prototype_field",
    billing: {},
    service: { adminToken: testSecrets.adminToken },
  });
  session = await harness.session(owner, organization);
  const issued = await harness.issueKey(session);
  apiKey = issued.key;
  keyId = issued.uuid;
  await harness.topUp({ kind: "user", id: owner }, "1000");
}, 60_000);
afterAll(async () => {
  await harness?.close();
});

/** Sent as text: an object literal's `__proto__` would set its prototype, not send a field. */
async function send(method: string, path: string, bearer: string, rawBody: string): Promise<Reply> {
  const response = await fetch(`${harness.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${bearer}`, "content-type": "application/json" },
    body: rawBody,
  });
  return { status: response.status, body: (await response.json()) as Reply["body"] };
}

const chatMessages = '"messages":[{"role":"user","content":"hi"}]';

/**
 * A body each body-taking route of the API description accepts, by `method path` as the description writes
 * it, with FIELD where the unknown field goes: so the field is all that is wrong with it.
 */
const acceptedBodies: Record<string, string> = {
  "post /llm/v1/chat/completions": `{"model":"alpha-5.4",${chatMessages},FIELD:{}}`,
  "post /llm/v1/responses": '{"model":"alpha-5.4","input":"hi",FIELD:{}}',
  "post /llm/apis": '{"name":"laptop",FIELD:{}}',
  "patch /llm/apis/{uuid}/status": '{"status":1,FIELD:{}}',
  "put /llm/apis/{uuid}/limits": '{"monthlySpendLimitWon":"5000",FIELD:{}}',
  "put /llm/organization/key-defaults": '{"allowedModels":null,FIELD:{}}',
  "put /llm/organization/members/{userId}": '{"role":"member",FIELD:{}}',
  "put /llm/alerts": '{"balanceBelowWon":"5000",FIELD:{}}',
  "post /llm/webhooks": '{"url":"https://example.com/hook","events":["balance.low"],FIELD:{}}',
  "post /llm/playground/key": "{FIELD:{}}",
  "post /admin/sessions": '{"userId":"someone",FIELD:{}}',
  "post /admin/accounts/{kind}/{id}/credits": '{"amountWon":"100","reference":"invoice 7",FIELD:{}}',
  "put /admin/keys/{uuid}/limits": '{"rateLimitRequestsPerMinute":60,FIELD:{}}',
  "put /admin/organizations/{id}/key-defaults": '{"allowedModels":null,FIELD:{}}',
  "put /admin/models/{slug}/price": '{"inputUsdPer1M":"1.25","outputUsdPer1M":"10",FIELD:{}}',
  "put /admin/discounts": '{"model":null,"organizationId":"proto-org","rate":"0.1",FIELD:{}}',
  "post /admin/fx-rates": '{"appliesOn":"2026-01-02","rate":"1400",FIELD:{}}',
  "post /admin/sign-in-links": '{"userId":"someone",FIELD:{}}',
  "post /admin/keys": '{"account":"user:someone","name":"laptop",FIELD:{}}',
};

const bodyRoutes = apiRoutes.filter((route) => route.body !== undefined);
const routeName = (route: ApiRoute) => `${route.method} ${route.path}`;

/** The route's path with its parameters filled in by values that exist: the caller's key, user, … */
function concretePath(route: ApiRoute): string {
  const values: Record<string, string> = {
    uuid: keyId,
    kind: "user",
    id: route.path.startsWith("/admin/organizations/") ? organization : owner,
    slug: "alpha-5.4",
    userId: "someone",
  };
  return route.path.replace(/\{(\w+)\}/g, (_whole, name: string) => {
    const value = values[name];
    if (value === undefined)
      throw new Error(`no value for the path parameter ${name} of ${routeName(route)}`);
    return value;
  });
}

function bearerOf(route: ApiRoute): string {
  const security = Array.isArray(route.security) ? route.security[0] : route.security;
  switch (security) {
    case "apiKey":
      return apiKey;
    case "session":
      return session;
    case "admin":
      return testSecrets.adminToken;
    default:
      throw new Error(`no credential for ${routeName(route)} (${String(security)})`);
  }
}

interface Door {
  method: string;
  path: () => string;
  body: string;
  bearer: () => string;
}

const routeDoors = bodyRoutes.map((route): [string, Door] => [
  routeName(route),
  {
    method: route.method.toUpperCase(),
    path: () => concretePath(route),
    body: acceptedBodies[routeName(route)] ?? "",
    bearer: () => bearerOf(route),
  },
]);

/** Objects inside bodies, and the console's sign-in bodies (not part of the API description). */
const generation = (path: string, body: string): Door => ({
  method: "POST",
  path: () => path,
  body,
  bearer: () => apiKey,
});
const consoleSignIn = (path: string, body: string): Door => ({
  method: "POST",
  path: () => path,
  body,
  bearer: () => session,
});
const otherDoors: Record<string, Door> = {
  "a chat message": generation(
    "/llm/v1/chat/completions",
    '{"model":"alpha-5.4","messages":[{"role":"user","content":"hi",FIELD:{}}]}',
  ),
  "chat stream_options": generation(
    "/llm/v1/chat/completions",
    `{"model":"alpha-5.4","stream":true,"stream_options":{FIELD:{}},${chatMessages}}`,
  ),
  "responses stream_options": generation(
    "/llm/v1/responses",
    '{"model":"alpha-5.4","input":"hi","stream":true,"stream_options":{FIELD:{}}}',
  ),
  "a responses tool": generation(
    "/llm/v1/responses",
    '{"model":"alpha-5.4","input":"hi","tools":[{"type":"function","name":"f",FIELD:{}}]}',
  ),
  "responses reasoning": generation(
    "/llm/v1/responses",
    '{"model":"alpha-5.4","input":"hi","reasoning":{FIELD:{}}}',
  ),
  "the console's session sign-in": consoleSignIn("/console/api/session", '{"token":"not-a-token",FIELD:{}}'),
  "the console's admin sign-in": consoleSignIn(
    "/console/api/admin-session",
    '{"adminToken":"not-it",FIELD:{}}',
  ),
};

describe("the routes of the API description that take a body", () => {
  it("each have a body here that they accept, so that each is tried below", () => {
    expect(bodyRoutes.length).toBeGreaterThan(10);
    expect(Object.keys(acceptedBodies).sort()).toEqual(bodyRoutes.map(routeName).sort());
  });
});

describe("a body field the body does not have", () => {
  it.each([...routeDoors, ...Object.entries(otherDoors)])(
    "given it misspelt or named __proto__, then it is refused 400/100 naming it: %s",
    async (_door, door) => {
      const withField = (field: string) =>
        send(door.method, door.path(), door.bearer(), door.body.replace("FIELD", JSON.stringify(field)));
      const misspelt = await withField("misspelt");
      expect(misspelt.status, JSON.stringify(misspelt.body)).toBe(400);
      expect(misspelt.body.status).toBe(100);
      expect(misspelt.body.message).toMatch(/^(.+\.)?misspelt: /);

      const prototype = await withField("__proto__");
      expect({ status: prototype.status, body: prototype.body }).toEqual({
        status: 400,
        body: JSON.parse(JSON.stringify(misspelt.body).replaceAll("misspelt", "__proto__")),
      });
    },
  );
});

describe("a finance operator's misspelt field", () => {
  it("given a top-up with `referense`, then it is refused naming it and the fields a top-up has, and nothing is credited", async () => {
    const account = "/admin/accounts/user/proto-misspelt";
    const refused = await send(
      "POST",
      `${account}/credits`,
      testSecrets.adminToken,
      '{"amountWon":"5000","referense":"invoice 12"}',
    );
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({
      status: 100,
      message: "referense: is not a field of this request (amountWon, reference)",
    });
    const view = await fetch(`${harness.url}${account}`, {
      headers: { authorization: `Bearer ${testSecrets.adminToken}` },
    });
    expect(((await view.json()) as { balanceWon: string }).balanceWon).toBe("0");
  });

  it("given a price whose required field is misspelt, then the misspelt field is named, with the right spelling beside it", async () => {
    const refused = await send(
      "PUT",
      "/admin/models/alpha-5.4/price",
      testSecrets.adminToken,
      '{"inputUsdPer1m":"1.25","outputUsdPer1M":"10"}',
    );
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({
      status: 100,
      message:
        "inputUsdPer1m: is not a field of this request (inputUsdPer1M, outputUsdPer1M, cachedInputUsdPer1M)",
    });
  });
});
