import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type OpenIdProvider, startOpenIdProvider } from "../../console/support/openid-provider";
import { type GatewayHarness, startGatewayHarness } from "../../support/gateway-harness";

/**
 * The OpenID Connect callback over plain HTTP, against a real provider in-process (oidc-provider): a
 * callback is what the browser's address bar says, so anyone can shape one. What this sign-in did not get
 * from its provider is the visitor's bad request (400, saying why), never the provider's failure (502).
 */

let provider: OpenIdProvider;
let harness: GatewayHarness;

beforeAll(async () => {
  provider = await startOpenIdProvider({ mina: { claims: {} } });
  harness = await startGatewayHarness({
    label: "oidc_callback",
    service: {
      oidc: {
        issuer: provider.issuer,
        clientId: provider.clientId,
        clientSecret: provider.clientSecret,
        userClaim: "sub",
        organizationClaim: undefined,
        roleClaim: undefined,
      },
    },
  });
  provider.register(`${harness.url}/console/oidc/callback`);
}, 120_000);

afterAll(async () => {
  await harness?.close();
  await provider?.close();
});

/** A sign-in started as the console's button starts one: its transaction cookie and its `state`. */
async function startSignIn(): Promise<{ cookie: string; state: string }> {
  const response = await fetch(`${harness.url}/console/sign-in/oidc`, { redirect: "manual" });
  expect(response.status).toBe(303);
  const state = new URL(response.headers.get("location")!).searchParams.get("state")!;
  const cookie = response.headers.getSetCookie().find((header) => header.startsWith("oidc_sign_in="))!;
  return { cookie: cookie.split(";")[0]!, state };
}

async function callback(query: string, cookie: string) {
  const response = await fetch(`${harness.url}/console/oidc/callback?${query}`, {
    redirect: "manual",
    headers: { cookie },
  });
  const html = await response.text();
  return { status: response.status, reason: /data-reason="([^"]+)"/.exec(html)?.[1], html };
}

describe("an OpenID Connect callback this sign-in's provider did not send", () => {
  it("given a callback with no code, a parameter twice or another issuer's iss, when it arrives with the sign-in's cookie, then it is refused 400 saying the callback is not the provider's, not 502", async () => {
    const issuer = `iss=${encodeURIComponent(provider.issuer)}`;
    const shapes: Array<[string, (state: string) => string, string]> = [
      ["no code", (state) => `state=${state}&${issuer}`, "code"],
      ["state twice", (state) => `state=${state}&state=${state}&code=abc&${issuer}`, "state"],
      ["code twice", (state) => `state=${state}&code=abc&code=def&${issuer}`, "code"],
      ["another issuer", (state) => `state=${state}&code=abc&iss=https%3A%2F%2Fidp.example.com`, "iss"],
      ["no issuer", (state) => `state=${state}&code=abc`, "iss"],
    ];
    for (const [shape, query, parameter] of shapes) {
      const { cookie, state } = await startSignIn();
      const refusal = await callback(query(state), cookie);
      expect({ shape, status: refusal.status, reason: refusal.reason }).toEqual({
        shape,
        status: 400,
        reason: "callback-invalid",
      });
      expect(refusal.html, shape).toContain(`<code>${parameter}</code>`);
    }
  });

  it("given a callback carrying another sign-in's state, or none, when it arrives with this sign-in's cookie, then it is refused 400 saying the state does not match", async () => {
    const issuer = `iss=${encodeURIComponent(provider.issuer)}`;
    const other = await startSignIn();
    for (const [shape, query] of [
      ["another sign-in's state", `state=${other.state}&code=abc&${issuer}`],
      ["no state", `code=abc&${issuer}`],
    ] as const) {
      const { cookie } = await startSignIn();
      const refusal = await callback(query, cookie);
      expect({ shape, status: refusal.status, reason: refusal.reason }).toEqual({
        shape,
        status: 400,
        reason: "state-mismatch",
      });
    }
  });

  it("given the provider's own answers — a refusal, or a code it never issued — then they stay 400 naming the provider's error", async () => {
    const issuer = `iss=${encodeURIComponent(provider.issuer)}`;
    for (const [query, code] of [
      [(state: string) => `state=${state}&error=access_denied&${issuer}`, "access_denied"],
      [(state: string) => `state=${state}&code=not-a-code-of-the-provider&${issuer}`, "invalid_grant"],
    ] as const) {
      const { cookie, state } = await startSignIn();
      const refusal = await callback(query(state), cookie);
      expect({ status: refusal.status, reason: refusal.reason }).toEqual({
        status: 400,
        reason: "provider-error",
      });
      expect(refusal.html).toContain(`<code>${code}</code>`);
    }
  });
});
