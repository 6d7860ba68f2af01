import { connect } from "node:net";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GatewayHarness, startGatewayHarness, testSecrets } from "../../support/gateway-harness";
import { servedOperations } from "../../support/served-operations";
import {
  type Answer,
  answerOf,
  bodyWith,
  deepNestingLevels,
  expectErrorBody,
  fuzzSettings,
  type Hostile,
  hostileText,
  hostileValue,
  isLedgerUnavailable,
  megabyteCharacters,
  percentEncoded,
  unstorableKinds,
} from "./support/hostile-values";

/**
 * Every endpoint the app serves — the ones /openapi.json lists, and the few it does not (usage, the console's
 * reads and cookie exchanges) — with a hostile value in one of its path parameters, query parameters or
 * body fields (or an extra field, or as the whole body), the rest valid: never a 5xx, every 4xx the spec's
 * error body, and text PostgreSQL cannot store refused 400/100 wherever it would reach the database.
 */

type Security = "apiKey" | "session" | "admin" | "none";

interface Operation {
  method: string;
  path: string;
  security: Security;
  pathParameters: string[];
  queryParameters: string[];
  /** Undefined: the operation takes no body. */
  bodyFields: string[] | undefined;
}

interface OpenApiOperation {
  security?: Record<string, unknown>[];
  parameters?: { name: string; in: "path" | "query" }[];
  requestBody?: { content: { "application/json": { schema: { properties?: Record<string, unknown> } } } };
}

/** Served but not in the document: the console's own routes. */
const undocumented: Operation[] = [
  route("post", "/console/api/session", "none", [], [], ["token"]),
  route("post", "/console/api/admin-session", "none", [], [], ["adminToken"]),
  route("get", "/console/sign-in", "none", [], ["code"]),
  route("get", "/console/{page}", "none", ["page"]),
  route("get", "/console/assets/{asset}", "none", ["asset"]),
];

function route(
  method: string,
  path: string,
  security: Security,
  pathParameters: string[] = [],
  queryParameters: string[] = [],
  bodyFields?: string[],
): Operation {
  return { method, path, security, pathParameters, queryParameters, bodyFields };
}

function operationsOf(document: { paths: Record<string, Record<string, OpenApiOperation>> }): Operation[] {
  return Object.entries(document.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, operation]) => {
      const parameters = operation.parameters ?? [];
      const schema = operation.requestBody?.content["application/json"].schema;
      return {
        method,
        path,
        security: (Object.keys(operation.security?.[0] ?? {})[0] ?? "none") as Security,
        pathParameters: parameters.filter((parameter) => parameter.in === "path").map(({ name }) => name),
        queryParameters: parameters.filter((parameter) => parameter.in === "query").map(({ name }) => name),
        bodyFields: schema ? Object.keys(schema.properties ?? {}) : undefined,
      };
    }),
  );
}

let harness: GatewayHarness;
const operations = servedOperations();
let served: Operation[];
let session: string;
let apiKey: string;
/** A key only this fuzz may deactivate or delete. */
let spareKeyId: string;

/** A valid value of each field, so that the one hostile value is what the request is judged by. */
const validFields = (): Record<string, unknown> => ({
  id: "fuzz-user",
  kind: "user",
  slug: "alpha-5.4-mini",
  uuid: spareKeyId,
  name: "fuzz key",
  description: "",
  isOrganization: false,
  status: 1,
  userId: "fuzz-user",
  organizationId: "fuzz-org",
  ttlSeconds: 60,
  amountWon: "1",
  reference: "fuzz",
  inputUsdPer1M: "1",
  outputUsdPer1M: "2",
  cachedInputUsdPer1M: "0.5",
  model: "alpha-5.4-mini",
  messages: [{ role: "user", content: "Hi" }],
  input: "Hi",
  instructions: "Be brief",
  stream: false,
  temperature: 1,
  top_p: 1,
  max_tokens: 8,
  max_completion_tokens: 8,
  max_output_tokens: 8,
  stream_options: null,
  rate: "0.1",
  appliesOn: "2026-11-20",
  rateDate: "2026-11-19",
  account: "user:fuzz-user",
  format: "json",
  from: "2026-11-01",
  to: "2026-11-30",
  limit: 5,
  cursor: undefined,
  groupBy: "day",
  search: "fuzz",
  after: undefined,
  token: session,
  adminToken: testSecrets.adminToken,
  code: "not-a-code",
  page: "usage",
  asset: "missing.js",
});

beforeAll(async () => {
  harness = await startGatewayHarness({
    label: "fuzz_endpoints",
    billing: {},
    service: {
      adminToken: testSecrets.adminToken,
      operationsRouter: operations.router,
    },
  });
  session = await harness.session("fuzz-user", "fuzz-org");
  apiKey = (await harness.issueKey(session)).key;
  spareKeyId = (await harness.issueKey(session, { name: "spare" })).uuid;
  await harness.topUp({ kind: "user", id: "fuzz-user" }, "1000000");
  const document = await (await fetch(`${harness.url}/openapi.json`)).json();
  served = [...operationsOf(document as never), ...undocumented];
}, 60_000);
afterAll(async () => {
  await operations.close();
  await harness?.close();
});

type Slot = { in: "path" | "query" | "body"; name: string } | { in: "whole body" };

/** Where a hostile value may go in an operation: each parameter, each body field, an extra one, the body. */
function slotsOf(operation: Operation): Slot[] {
  const slots: Slot[] = [
    ...operation.pathParameters.map((name) => ({ in: "path" as const, name })),
    ...operation.queryParameters.map((name) => ({ in: "query" as const, name })),
    { in: "query", name: "extra" },
  ];
  if (operation.method !== "get" && operation.method !== "delete") {
    slots.push({ in: "whole body" }, { in: "body", name: "extra" });
    for (const name of operation.bodyFields ?? []) slots.push({ in: "body", name });
  }
  return slots;
}

function bearerOf(security: Security): string | undefined {
  switch (security) {
    case "apiKey":
      return apiKey;
    case "session":
      return session;
    case "admin":
      return testSecrets.adminToken;
    case "none":
      return undefined;
    default: {
      const unreachable: never = security;
      throw new Error(`unknown security ${String(unreachable)}`);
    }
  }
}

async function send(operation: Operation, slot: Slot, hostile: Hostile): Promise<Answer> {
  const valid = validFields();
  const value = (name: string) =>
    slot.in !== "whole body" && slot.name === name ? hostileText(hostile) : String(valid[name] ?? "x");
  let path = operation.path;
  for (const name of operation.pathParameters) path = path.replace(`{${name}}`, percentEncoded(value(name)));
  const queryNames = slot.in === "query" ? [...new Set([...operation.queryParameters, slot.name])] : [];
  const query = queryNames
    .filter((name) => name === (slot as { name: string }).name || valid[name] !== undefined)
    .map((name) => `${name}=${percentEncoded(value(name))}`)
    .join("&");
  const fields = Object.fromEntries((operation.bodyFields ?? []).map((name) => [name, valid[name]]));
  const hasBody = operation.method !== "get" && operation.method !== "delete";
  const bearer = bearerOf(operation.security);
  const response = await fetch(`${harness.url}${path}${query ? `?${query}` : ""}`, {
    method: operation.method.toUpperCase(),
    redirect: "manual",
    headers: { "content-type": "application/json", ...(bearer ? { authorization: `Bearer ${bearer}` } : {}) },
    ...(hasBody
      ? {
          body:
            slot.in === "body" || slot.in === "whole body"
              ? bodyWith(fields, slot.in === "body" ? slot.name : undefined, hostile)
              : JSON.stringify(fields),
        }
      : {}),
  });
  return answerOf(response);
}

/** 5xx answers documented whatever the input: the ledger down, no FX source configured, not ready. */
function isDocumentedUnavailable(operation: Operation, answer: Answer): boolean {
  return (
    isLedgerUnavailable(answer) ||
    (answer.status === 503 &&
      ((operation.path === "/admin/fx-rates/refresh" && JSON.parse(answer.text).status === 300) ||
        operation.path === "/health/ready"))
  );
}

/** Routes whose input never reaches the database: operations, the console's files, generation (sent upstream). */
const reachesNoDatabase = (operation: Operation) =>
  operation.path.startsWith("/llm/v1") ||
  operation.path === "/console/{page}" ||
  operation.path === "/console/assets/{asset}" ||
  ["/health/live", "/health/ready", "/healthz", "/metrics", "/openapi.json", "/docs"].includes(
    operation.path,
  );

function judge(operation: Operation, slot: Slot, hostile: Hostile, answer: Answer): void {
  const context = `${operation.method} ${operation.path} ${JSON.stringify(slot)} ${hostile.kind}: ${answer.status} ${answer.text.slice(0, 200)}`;
  // Refused before anything reaches the database, so even while the ledger is down.
  if (unstorableKinds.has(hostile.kind) && slot.in !== "whole body" && !reachesNoDatabase(operation)) {
    // A megabyte in the URL is over node's header limit before it is text at all: 431, still status 100.
    const overHeaderLimit = hostile.kind === "megabyte-nul" && slot.in !== "body";
    expect({ status: answer.status, code: JSON.parse(answer.text).status }, context).toEqual({
      status: overHeaderLimit ? 431 : 400,
      code: 100,
    });
  }
  if (isDocumentedUnavailable(operation, answer)) return;
  expect(answer.status, context).toBeLessThan(500);
  if (answer.status >= 400) expectErrorBody(answer, context);
}

describe("given a hostile value in one field of any endpoint, the rest valid", () => {
  it("then never a 5xx, every 4xx the error body, unstorable text 400/100", async () => {
    expect(served.length).toBeGreaterThan(35);
    const settings = fuzzSettings(120);
    const request = fc
      .tuple(fc.nat(), fc.nat(), hostileValue)
      .map(([operationIndex, slotIndex, hostile]) => {
        const operation = served[operationIndex % served.length]!;
        const slots = slotsOf(operation);
        return { operation, slot: slots[slotIndex % slots.length]!, hostile };
      })
      .map((chosen) => ({
        ...chosen,
        toString: () => `${chosen.operation.method} ${chosen.operation.path} ${JSON.stringify(chosen.slot)}`,
      }));
    await fc.assert(
      fc.asyncProperty(request, async ({ operation, slot, hostile }) => {
        judge(operation, slot, hostile, await send(operation, slot, hostile));
      }),
      settings,
    );
  }, 120_000);

  it("then each endpoint, with each of its fields unstorable in turn, is refused before the database", async () => {
    for (const operation of served.filter((candidate) => !reachesNoDatabase(candidate))) {
      for (const slot of slotsOf(operation).filter((candidate) => candidate.in !== "whole body")) {
        const hostile: Hostile = { kind: slot.in === "body" ? "low-surrogate" : "nul-inside" };
        judge(operation, slot, hostile, await send(operation, slot, hostile));
      }
    }
  }, 60_000);

  it("then a 1 MB query or path, beyond node's header limit, is 431 with the error body (status 100)", async () => {
    for (const path of [
      `/llm/apis?isOrganization=${"x".repeat(megabyteCharacters)}`,
      `/admin/accounts/user/${"x".repeat(megabyteCharacters)}`,
      `/llm/v1/models/${"x".repeat(megabyteCharacters)}`,
    ]) {
      const answer = await answerOf(await fetch(`${harness.url}${path}`));
      expect(answer.status).toBe(431);
      expect(JSON.parse(answer.text)).toMatchObject({ status: 100 });
      expectErrorBody(answer, path.slice(0, 40));
    }
  });

  it("then a request node cannot parse gets the error body too (400/100), and the connection closes", async () => {
    const { port } = new URL(harness.url);
    for (const raw of ["GARBAGE\r\n\r\n", "GET / HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n"]) {
      const reply = await new Promise<string>((resolve, reject) => {
        const socket = connect(Number(port), "127.0.0.1", () => socket.write(raw));
        let text = "";
        socket.on("data", (chunk) => {
          text += chunk.toString("utf8");
        });
        socket.on("end", () => resolve(text));
        socket.on("error", reject);
      });
      const [head = "", body = ""] = reply.split("\r\n\r\n");
      expect(head).toMatch(/^HTTP\/1\.1 400 /);
      expect(head).toMatch(/\r\nx-request-id: req_[0-9a-f]{32}\r\n/);
      expect(JSON.parse(body)).toMatchObject({ status: 100, message: "Malformed HTTP request" });
    }
  });

  it("then a session or admin cookie of hostile text is no session: 401/110 with the error body, never a 5xx", async () => {
    const cookieValues = ["%E0%A4", "%ED%A0%80", "a%00b", "%", "x".repeat(8_000), '"quoted"', "a=b=c"];
    for (const operation of served.filter((candidate) => ["session", "admin"].includes(candidate.security))) {
      for (const value of cookieValues) {
        const path = operation.path.replace("{kind}", "user").replace(/\{[a-z]+\}/gi, "x");
        const answer = await answerOf(
          await fetch(`${harness.url}${path}`, {
            method: operation.method.toUpperCase(),
            headers: { cookie: `session=${value}; admin_session=${value}` },
          }),
        );
        const context = `${operation.method} ${path} cookie ${value.slice(0, 20)}: ${answer.status} ${answer.text.slice(0, 200)}`;
        expect(answer.status, context).toBe(401);
        expectErrorBody(answer, context);
      }
    }
  });

  it(`then a body nested ${deepNestingLevels} levels deep is a 4xx with the error body on every JSON route`, async () => {
    for (const operation of served.filter((candidate) => candidate.bodyFields !== undefined)) {
      const answer = await send(operation, { in: "whole body" }, { kind: "deep-arrays" });
      expect(answer.status, operation.path).toBeGreaterThanOrEqual(400);
      expect(answer.status, operation.path).toBeLessThan(500);
      expectErrorBody(answer, operation.path);
    }
  });
});
