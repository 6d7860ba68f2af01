import { Validator } from "@seriousme/openapi-schema-validator";
import type { Router } from "express";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAccountRouter } from "../../src/gateway/account/account-router";
import { createActivityRouter } from "../../src/gateway/account/activity-routes";
import { createReceiptRouter } from "../../src/gateway/account/receipt-routes";
import { createUsageRouter } from "../../src/gateway/account/usage-routes";
import { createAdminActivityRouter } from "../../src/gateway/admin/activity-routes";
import { type AdminRouterDependencies, createAdminRouter } from "../../src/gateway/admin/admin-router";
import { createConsoleReadRouter } from "../../src/gateway/admin/console-read-routes";
import { createAdminKeyLimitsRouter } from "../../src/gateway/admin/key-limits-routes";
import { createUpstreamHealthRouter } from "../../src/gateway/admin/upstream-routes";
import { createAdminUserAccessRouter } from "../../src/gateway/admin/user-access-routes";
import { createAlertRouters } from "../../src/gateway/alerts/alert-routes";
import { createKeyRouter } from "../../src/gateway/keys/key-routes";
import { createOrganizationKeyDefaultsRouter } from "../../src/gateway/keys/organization-key-defaults-routes";
import { createOrganizationMemberRouter } from "../../src/gateway/keys/organization-member-routes";
import { createPlaygroundRouter } from "../../src/gateway/keys/playground-routes";
import { createLedgerPublicRouter } from "../../src/gateway/ledger/public-key-routes";
import { createModelRouter } from "../../src/gateway/models/model-routes";
import { buildOpenApiDocument } from "../../src/gateway/openapi/openapi-document";
import { createAdminSessionRouter } from "../../src/gateway/sessions/admin-session-routes";
import type { ApiKeyService } from "../../src/keys/api-key-service";
import { organizationActions, rolesAllowed } from "../../src/keys/organization-roles";
import { webhookEventTypes } from "../../src/ledger/events";
import type { SessionTokens } from "../../src/sessions/session-tokens";
import { type GatewayHarness, startGatewayHarness, testSecrets } from "../support/gateway-harness";
import { servedOperations } from "../support/served-operations";

/**
 * C11: /openapi.json is a valid OpenAPI 3.1 document listing every route the app serves, and /docs renders
 * it without fetching anything else.
 */

type Document = {
  openapi: string;
  paths: Record<string, Record<string, { responses: Record<string, unknown>; requestBody?: unknown }>>;
};

let harness: GatewayHarness;
const operations = servedOperations();
let served: Document;

beforeAll(async () => {
  harness = await startGatewayHarness({
    label: "openapi",
    billing: {},
    service: {
      adminToken: testSecrets.adminToken,
      operationsRouter: operations.router,
    },
  });
  const response = await fetch(`${harness.url}/openapi.json`);
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toContain("application/json");
  served = (await response.json()) as Document;
}, 60_000);
afterAll(async () => {
  await operations.close();
  await harness?.close();
});

/** Every (method, path) an express router serves, its parameters written as OpenAPI writes them. */
function routesOf(prefix: string, router: Router): string[] {
  const routes: string[] = [];
  for (const layer of router.stack as unknown as {
    route?: { path: string; methods: Record<string, boolean> };
    handle?: { stack?: unknown };
  }[]) {
    if (layer.route) {
      const path = `${prefix}${layer.route.path}`.replace(/:([A-Za-z]+)/g, "{$1}").replace(/(.)\/$/, "$1");
      for (const method of Object.keys(layer.route.methods)) routes.push(`${method} ${path}`);
    } else if (layer.handle?.stack) routes.push(...routesOf(prefix, layer.handle as unknown as Router));
  }
  return routes;
}

function documentedRoutes(document: Document): string[] {
  return Object.entries(document.paths).flatMap(([path, methods]) =>
    Object.keys(methods).map((method) => `${method} ${path}`),
  );
}

describe("GET /openapi.json", () => {
  it("is a valid OpenAPI 3.1 document", async () => {
    expect(served.openapi).toBe("3.1.0");
    const result = await new Validator().validate(served as never);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it("says who may do what in an organization, beside the members", () => {
    const text = JSON.stringify(served);
    for (const action of organizationActions)
      expect(text, action).toContain(`${action} (${rolesAllowed[action].join(", ")})`);
  });

  it("describes the body of every message a webhook endpoint receives, under webhooks", () => {
    const webhooks = (served as unknown as { webhooks: Record<string, { post: Record<string, unknown> }> })
      .webhooks;
    expect(Object.keys(webhooks).sort()).toEqual([...webhookEventTypes, "webhook.test"].sort());
    for (const [type, item] of Object.entries(webhooks))
      expect(JSON.stringify(item.post.requestBody), type).toContain(`"const":"${type}"`);
  });

  it("lists every route the express edge serves", () => {
    const unused = {} as never;
    const served = [
      ...routesOf("/llm/apis", createKeyRouter(unused as ApiKeyService, unused)),
      ...routesOf("/llm/organization/members", createOrganizationMemberRouter(unused)),
      ...routesOf("/llm/alerts", createAlertRouters(unused, unused).alertRouter),
      ...routesOf("/llm/webhooks", createAlertRouters(unused, unused).webhookRouter),
      ...routesOf("/llm", createAccountRouter({ database: unused, roles: unused })),
      ...routesOf("/llm/usage/activity", createActivityRouter(unused, unused)),
      ...routesOf("/llm/usage", createUsageRouter(unused, unused)),
      ...routesOf("/llm/organization/key-defaults", createOrganizationKeyDefaultsRouter(unused, unused)),
      ...routesOf("/llm/models", createModelRouter(unused)),
      ...routesOf("/llm/playground", createPlaygroundRouter(unused)),
      ...routesOf("/admin", createAdminActivityRouter(unused)),
      ...routesOf("/admin", createConsoleReadRouter(unused)),
      ...routesOf("/admin", createAdminKeyLimitsRouter(unused)),
      ...routesOf("/admin", createUpstreamHealthRouter(unused)),
      ...routesOf("/admin", createAdminUserAccessRouter(unused)),
      ...routesOf("/admin", createAdminSessionRouter(unused as SessionTokens, unused)),
      ...routesOf("/admin", createAdminRouter(unused as AdminRouterDependencies)),
      ...routesOf("", operations.router(harness.service)),
      ...routesOf("/llm/receipts", createReceiptRouter(unused)),
      ...routesOf("/ledger", createLedgerPublicRouter(undefined)),
    ];
    expect(served.length).toBeGreaterThan(20);
    const documented = new Set(documentedRoutes(buildOpenApiDocument({ version: "test" }) as Document));
    for (const route of served) expect(documented.has(route), route).toBe(true);
  });

  it("lists no route the gateway does not serve", async () => {
    const session = await harness.session("openapi-user");
    const { key } = await harness.issueKey(session);
    // Each route with the credentials it takes, so a missing route shows as "No such route", not as 401.
    const authorizationOf = (path: string) =>
      path.startsWith("/admin")
        ? testSecrets.adminToken
        : path.startsWith("/llm/v1")
          ? key
          : path.startsWith("/llm")
            ? session
            : "none";
    const request = (method: string, path: string) =>
      fetch(`${harness.url}${path}`, {
        method: method.toUpperCase(),
        headers: { "content-type": "application/json", authorization: `Bearer ${authorizationOf(path)}` },
        ...(method === "get" || method === "delete" ? {} : { body: "{}" }),
      });
    for (const missing of ["/admin/no-such-thing", "/llm/no-such-thing", "/llm/v1/no-such-thing", "/nothing"])
      expect(await (await request("get", missing)).text()).toContain("No such route");
    for (const route of documentedRoutes(served)) {
      const [method, path] = route.split(" ") as [string, string];
      const concrete = path
        .replace("{kind}", "user")
        .replace("{uuid}", "00000000-0000-4000-8000-000000000000")
        .replace(/\{[a-z]+\}/gi, "x");
      const response = await request(method, concrete);
      const text = await response.text();
      expect(text.includes("No such route"), `${route}: ${response.status} ${text.slice(0, 100)}`).toBe(
        false,
      );
    }
  });

  it("given a NUL in any path parameter, then the route's answer is one its responses document", async () => {
    const session = await harness.session("openapi-path-user");
    const { key } = await harness.issueKey(session);
    const credentialOf = (security: string) =>
      ({ apiKey: key, session, admin: testSecrets.adminToken })[security] ?? "none";
    const operations = Object.entries(served.paths).flatMap(([path, methods]) =>
      Object.entries(methods).map(([method, operation]) => ({ method, path, operation })),
    );
    const withPathParameters = operations.filter(({ path }) => path.includes("{"));
    expect(withPathParameters.length).toBeGreaterThan(10);
    const undocumented: string[] = [];
    for (const { method, path, operation } of withPathParameters) {
      const { security } = operation as unknown as { security?: Record<string, unknown>[] };
      const credential = credentialOf(Object.keys(security?.[0] ?? {})[0] ?? "none");
      for (const parameter of path.match(/\{[A-Za-z]+\}/g)!) {
        const concrete = path
          .replace(parameter, "team%00a")
          .replace("{kind}", "user")
          .replace("{uuid}", "00000000-0000-4000-8000-000000000000")
          .replace(/\{[A-Za-z]+\}/g, "x");
        const response = await fetch(`${harness.url}${concrete}`, {
          method: method.toUpperCase(),
          headers: { "content-type": "application/json", authorization: `Bearer ${credential}` },
          ...(method === "get" || method === "delete" ? {} : { body: "{}" }),
        });
        const answer = (await response.json()) as { status: number };
        const documented = operation.responses[String(response.status)] as
          | { description: string }
          | undefined;
        if (!documented?.description.includes(`${answer.status}:`))
          undocumented.push(`${method} ${path} ${parameter}: ${response.status}/${answer.status}`);
      }
    }
    expect(undocumented).toEqual([]);
  });

  it("shows every request body closed (additionalProperties false), as the gateway refuses a field it does not list", () => {
    type Body = { content: { "application/json": { schema: { additionalProperties?: unknown } } } };
    const bodies = Object.entries(served.paths).flatMap(([path, item]) =>
      Object.entries(item).flatMap(([method, operation]) =>
        operation.requestBody === undefined
          ? []
          : [{ route: `${method} ${path}`, body: operation.requestBody as Body }],
      ),
    );
    expect(bodies.length).toBeGreaterThan(10);
    const open = bodies.filter(
      ({ body }) => body.content["application/json"].schema.additionalProperties !== false,
    );
    expect(open.map(({ route }) => route)).toEqual([]);
  });

  it("documents the 429/130 of a webhook endpoint's test with 5 test messages waiting", () => {
    // Answered by the gateway (signed-webhooks.test.ts) and listed in docs/api.md's error table.
    const test = served.paths["/llm/webhooks/{id}/test"]!.post! as {
      responses: Record<string, { description: string }>;
    };
    expect(test.responses["429"]?.description).toContain("130:");
  });

  it("given a member asking for the organization's statement with lines=charges, then the 403/160 it gets is documented", () => {
    // Answered by the gateway (member-charges.test.ts): a member reads the totals, not other members' charges.
    const statement = served.paths["/llm/statements"]!.get! as {
      responses: Record<string, { description: string }>;
    };
    expect(statement.responses["403"]?.description).toContain("160:");
  });

  it("describes bodies from the validating schemas and the error codes", () => {
    const chat = served.paths["/llm/v1/chat/completions"]!.post! as {
      requestBody: {
        content: {
          "application/json": { schema: { properties: Record<string, unknown>; required: string[] } };
        };
      };
      responses: Record<string, { description: string }>;
    };
    const body = chat.requestBody.content["application/json"].schema;
    expect(body.required).toEqual(["model", "messages"]);
    expect(body.properties.temperature).toEqual({
      anyOf: [{ type: "number", minimum: 0, maximum: 2 }, { type: "null" }],
    });
    // The string shorthand of a message's content is part of what a client may send.
    const messageKinds = (
      body.properties.messages as {
        items: { oneOf: { properties: { role: { const?: string }; content: { anyOf: unknown[] } } }[] };
      }
    ).items.oneOf;
    const userMessage = messageKinds.find((kind) => kind.properties.role.const === "user")!;
    expect(userMessage.properties.content.anyOf[0]).toEqual({ type: "string" });
    expect(Object.keys(chat.responses).sort()).toEqual([
      "200",
      "400",
      "401",
      "403",
      "404",
      "429",
      "500",
      "503",
    ]);
    expect(chat.responses["403"]!.description).toContain("150");
    const limitsBody = served.paths["/llm/apis/{uuid}/limits"]!.put! as {
      requestBody: { content: { "application/json": { schema: { properties: Record<string, unknown> } } } };
    };
    expect(limitsBody.requestBody.content["application/json"].schema.properties).toHaveProperty(
      "allowedModels",
    );
    const credits = served.paths["/admin/accounts/{kind}/{id}/credits"]!.post! as unknown as {
      parameters: { name: string; in: string; required: boolean; schema: { maxLength?: number } }[];
    };
    expect(credits.parameters.find((parameter) => parameter.in === "header")).toMatchObject({
      name: "idempotency-key",
      required: false,
      schema: { maxLength: 255 },
    });
    const webhookBody = served.paths["/llm/webhooks"]!.post! as {
      requestBody: { content: { "application/json": { schema: { properties: Record<string, unknown> } } } };
    };
    expect(
      JSON.stringify(webhookBody.requestBody.content["application/json"].schema.properties.events),
    ).toContain("key.limit_reached");
    expect(served.paths["/llm/webhooks/{id}/deliveries"]!.get!.responses).toHaveProperty("200");
    expect(chat.responses["400"]!.description).toContain("100");
    expect(chat.responses["400"]!.description).toContain("140");
    expect(chat.responses["400"]!.description).toContain("401");
    expect(chat.responses["429"]!.description).toContain("Retry-After");
    const credit = served.paths["/admin/accounts/{kind}/{id}/credits"]!.post! as {
      requestBody: { content: { "application/json": { schema: { properties: Record<string, unknown> } } } };
    };
    expect(credit.requestBody.content["application/json"].schema.properties.amountWon).toMatchObject({
      type: "string",
    });
  });
});

describe("GET /docs", () => {
  it("is an HTML page that loads only /openapi.json", async () => {
    const response = await fetch(`${harness.url}/docs`);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toContain("text/html");
    const html = await response.text();
    expect(html).toContain('fetch("/openapi.json")');
    expect(html).not.toMatch(/<script[^>]+src=|<link[^>]+href=|https?:\/\//);
  });

  it.each(["/docs", "/console/", "/llm/balance"])(
    "answers %s with headers that let no other page frame it, run another origin's script or sniff its type",
    async (path) => {
      const response = await fetch(`${harness.url}${path}`);
      const policy = response.headers.get("content-security-policy") ?? "";
      expect(policy).toContain("frame-ancestors 'none'");
      expect(policy).toMatch(/script-src 'self' 'sha256-[A-Za-z0-9+/]+=*'/);
      expect(policy).not.toContain("upgrade-insecure-requests");
      expect(response.headers.get("x-frame-options")).toBe("DENY");
      expect(response.headers.get("x-content-type-options")).toBe("nosniff");
      expect(response.headers.get("referrer-policy")).toBe("no-referrer");
      // A gateway on plain HTTP: HSTS is its TLS proxy's to send.
      expect(response.headers.get("strict-transport-security")).toBeNull();
    },
  );
});

/**
 * The paths of `value` whose field its JSON Schema does not document: every key of an object must be one of
 * its schema's properties, and of a union, one branch must document it whole.
 */
function undocumentedFieldsOf(value: unknown, schema: Record<string, unknown>, path = "$"): string[] {
  const branches = (schema.anyOf ?? schema.oneOf) as Record<string, unknown>[] | undefined;
  if (branches) {
    const misses = branches.map((branch) => undocumentedFieldsOf(value, branch, path));
    return misses.reduce((fewest, miss) => (miss.length < fewest.length ? miss : fewest));
  }
  if (Array.isArray(value) && schema.items)
    return value.flatMap((item, index) =>
      undocumentedFieldsOf(item, schema.items as Record<string, unknown>, `${path}[${index}]`),
    );
  if (value === null || typeof value !== "object" || Array.isArray(value)) return [];
  const properties = (schema.properties ?? {}) as Record<string, Record<string, unknown>>;
  return Object.entries(value).flatMap(([key, field]) =>
    properties[key] ? undocumentedFieldsOf(field, properties[key], `${path}.${key}`) : [`${path}.${key}`],
  );
}

describe("the generation replies /openapi.json documents", () => {
  let apiKey: string;

  beforeAll(async () => {
    apiKey = (await harness.issueKey(await harness.session("wendy"))).key;
    await harness.topUp({ kind: "user", id: "wendy" }, "1000");
  });

  const documentedReplyOf = (path: string) =>
    (
      served.paths[path]!.post!.responses["200"] as {
        content: { "application/json": { schema: Record<string, unknown> } };
      }
    ).content["application/json"].schema;

  const weather = {
    type: "function",
    function: { name: "get_weather", parameters: { type: "object", properties: {} } },
  };
  const replies = [
    ["/llm/v1/chat/completions", "text", { messages: [{ role: "user", content: "Why do rivers bend?" }] }],
    ["/llm/v1/responses", "text", { input: "Why do rivers bend?" }],
    [
      "/llm/v1/chat/completions",
      "tool call",
      {
        messages: [{ role: "user", content: "Weather in Seoul?" }],
        tools: [weather],
        tool_choice: "required",
      },
    ],
    [
      "/llm/v1/responses",
      "function call",
      {
        input: "Weather in Seoul?",
        tools: [{ type: "function", name: "get_weather", parameters: { type: "object", properties: {} } }],
        tool_choice: "required",
      },
    ],
    ["/llm/v1/chat/completions", "refusal", { messages: [{ role: "user", content: "Tell me" }] }],
    ["/llm/v1/responses", "refusal", { input: "Tell me" }],
  ] as const;

  it.each(replies)(
    "given a JSON reply of %s holding a %s, when it is read against its documented body, then every field it holds is documented",
    async (path, kind, request) => {
      harness.simulator.setFault(kind === "refusal" ? { kind: "refuse" } : undefined);
      try {
        const response = await fetch(`${harness.url}${path}`, {
          method: "POST",
          headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
          body: JSON.stringify({ model: "alpha-5.4-mini", ...request }),
        });
        const body = await response.json();
        expect(response.status, JSON.stringify(body)).toBe(200);
        // The reply is of the kind named: the case would prove nothing otherwise.
        if (kind !== "text")
          expect(JSON.stringify(body)).toContain(kind === "refusal" ? '"refusal"' : "get_weather");
        expect(undocumentedFieldsOf(body, documentedReplyOf(path))).toEqual([]);
      } finally {
        harness.simulator.setFault(undefined);
      }
    },
  );
});
