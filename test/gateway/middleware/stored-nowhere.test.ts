import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GatewayHarness, startGatewayHarness, testSecrets } from "../../support/gateway-harness";

/**
 * An answer of the account, admin and console APIs may hold a secret shown once (a key, a webhook's signing
 * secret, a session token) or an account's money: no cache between the client and the gateway (a corporate
 * proxy, the browser's disk cache, its back button) may keep it. Each says `Cache-Control: no-store`.
 */

let harness: GatewayHarness;
let session: string;

beforeAll(async () => {
  harness = await startGatewayHarness({
    label: "stored_nowhere",
    billing: {},
    service: { adminToken: testSecrets.adminToken },
  });
  session = await harness.session("stored-nowhere-user");
}, 60_000);

afterAll(async () => {
  await harness?.close();
});

async function call(method: string, path: string, bearer: string | undefined, body?: unknown) {
  const response = await fetch(`${harness.url}${path}`, {
    method,
    headers: {
      ...(bearer === undefined ? {} : { authorization: `Bearer ${bearer}` }),
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  await response.arrayBuffer();
  return { status: response.status, cacheControl: response.headers.get("cache-control") };
}

describe("answers that hold a secret or an account's money", () => {
  it.each([
    ["a key issued", "POST", "/llm/apis", "session", { name: "laptop" }, 201],
    ["a playground key issued", "POST", "/llm/playground/key", "session", {}, 201],
    [
      "a webhook added, with its signing secret",
      "POST",
      "/llm/webhooks",
      "session",
      { url: "https://8.8.8.8/hook", events: ["balance.low"] },
      201,
    ],
    ["the balance", "GET", "/llm/balance", "session", undefined, 200],
    ["a session minted by the admin", "POST", "/admin/sessions", "admin", { userId: "someone" }, 201],
    [
      "a key issued by the admin",
      "POST",
      "/admin/keys",
      "admin",
      { account: "user:someone", name: "laptop" },
      201,
    ],
    ["a session exchanged for the console's cookie", "POST", "/console/api/session", "none", "token", 200],
    ["a refusal", "GET", "/llm/balance", "none", undefined, 401],
  ] as const)(
    "given %s, then it says Cache-Control: no-store",
    async (_what, method, path, who, body, status) => {
      const bearer = who === "session" ? session : who === "admin" ? testSecrets.adminToken : undefined;
      const sent = body === "token" ? { token: session } : body;

      const reply = await call(method, path, bearer, sent);

      expect(reply.status).toBe(status);
      expect(reply.cacheControl).toBe("no-store");
    },
  );
});
