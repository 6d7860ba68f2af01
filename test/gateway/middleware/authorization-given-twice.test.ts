import { request as httpRequest } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GatewayHarness, startGatewayHarness, testSecrets } from "../../support/gateway-harness";

/**
 * Two `Authorization` headers are two credentials, and which one counts is each reader's guess: node keeps the
 * first, a proxy or firewall in front may judge the last. The gateway takes neither: 401/110 saying to send
 * one, on the generation endpoints, the session routes and the admin API alike, and nothing is served.
 */

let harness: GatewayHarness;
let session: string;
let key: string;

beforeAll(async () => {
  harness = await startGatewayHarness({
    label: "authorization_twice",
    service: { adminToken: testSecrets.adminToken },
  });
  session = await harness.session("twice-user");
  key = (await harness.issueKey(session)).key;
  await harness.topUp({ kind: "user", id: "twice-user" }, "1000");
}, 60_000);

afterAll(async () => {
  await harness?.close();
});

/** A request with each of `authorizations` as a header line of its own. */
function withAuthorizations(
  method: string,
  path: string,
  authorizations: string[],
  body?: unknown,
): Promise<{ status: number; body: Record<string, unknown>; requestId: unknown }> {
  return new Promise((resolve, reject) => {
    const sent = body === undefined ? undefined : JSON.stringify(body);
    const request = httpRequest(
      `${harness.url}${path}`,
      {
        method,
        // Raw name, value pairs, one header line each: node's client then adds none of its own.
        headers: [
          "host",
          new URL(harness.url).host,
          ...authorizations.flatMap((value) => ["authorization", value]),
          ...(sent === undefined
            ? []
            : ["content-type", "application/json", "content-length", String(Buffer.byteLength(sent))]),
        ],
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on("end", () =>
          resolve({
            status: response.statusCode ?? 0,
            body: JSON.parse(Buffer.concat(chunks).toString("utf8")) as Record<string, unknown>,
            requestId: response.headers["x-request-id"],
          }),
        );
      },
    );
    request.on("error", reject);
    request.end(sent);
  });
}

const chat = { model: "alpha-5.4", max_tokens: 5, messages: [{ role: "user", content: "hi" }] };

describe("two Authorization headers", () => {
  it.each([
    [
      "a generation request, the key first",
      "POST",
      "/llm/v1/chat/completions",
      () => [`Bearer ${key}`, "Bearer x"],
      chat,
    ],
    [
      "a generation request, the key last",
      "POST",
      "/llm/v1/chat/completions",
      () => ["Bearer x", `Bearer ${key}`],
      chat,
    ],
    ["the models list", "GET", "/llm/v1/models", () => [`Bearer ${key}`, `Bearer ${key}`], undefined],
    ["a session route", "GET", "/llm/apis", () => [`Bearer ${session}`, `Bearer ${key}`], undefined],
    [
      "the admin API",
      "GET",
      "/admin/fx-rates",
      () => [`Bearer ${testSecrets.adminToken}`, "Bearer x"],
      undefined,
    ],
  ] as const)(
    "given %s, then 401/110 saying to send one, and nothing is served",
    async (_what, method, path, authorizations, body) => {
      const reply = await withAuthorizations(method, path, [...authorizations()], body);

      expect(reply.status).toBe(401);
      expect(reply.body).toMatchObject({
        status: 110,
        message: expect.stringContaining("one Authorization header"),
      });
      expect(reply.requestId).toEqual(expect.any(String));
    },
  );

  it("given one Authorization header, then the same request is served", async () => {
    const reply = await withAuthorizations("POST", "/llm/v1/chat/completions", [`Bearer ${key}`], chat);

    expect(reply.status).toBe(200);
  });
});
