import { request as send } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../../src/config";
import { ConfigError } from "../../../src/kernel/config-error";
import { type OpenIdProvider, startOpenIdProvider } from "../../console/support/openid-provider";
import { type GatewayHarness, startGatewayHarness, testSecrets } from "../../support/gateway-harness";

/**
 * Behind a TLS-terminating proxy the gateway sees plain http and whatever `Host` the proxy sends. With
 * `PUBLIC_URL` set, what it hands browsers names the public origin: the OpenID Connect callback, the admin's
 * sign-in links and the base URL in its hints; and its cookies say `Secure`. The same requests to a gateway
 * without it are the control: they name the request's own origin, and no cookie says `Secure`.
 */

const publicUrl = "https://llm.example.test";
/** What a proxy in front of the gateway may send as `Host`. */
const internalHost = "gateway.internal:8080";

let provider: OpenIdProvider;
let behindProxy: GatewayHarness;
let direct: GatewayHarness;

beforeAll(async () => {
  provider = await startOpenIdProvider({});
  provider.register(`${publicUrl}/console/oidc/callback`);
  const oidc = {
    issuer: provider.issuer,
    clientId: provider.clientId,
    clientSecret: provider.clientSecret,
    userClaim: "sub",
    organizationClaim: undefined,
    roleClaim: undefined,
  };
  behindProxy = await startGatewayHarness({
    label: "public_url",
    service: {
      adminToken: testSecrets.adminToken,
      oidc,
      publicUrl: new URL(publicUrl),
    },
  });
  direct = await startGatewayHarness({
    label: "public_url_unset",
    service: { adminToken: testSecrets.adminToken, oidc },
  });
}, 120_000);

afterAll(async () => {
  await behindProxy?.close();
  await direct?.close();
  await provider?.close();
});

/** A request as the proxy forwards it: plain http, the proxy's `Host`. */
async function forwarded(
  harness: GatewayHarness,
  method: "GET" | "POST",
  path: string,
  options: { body?: unknown; admin?: boolean; headers?: Record<string, string> } = {},
) {
  const response = await send(`${harness.url}${path}`, {
    method,
    headers: {
      host: internalHost,
      ...(options.body === undefined ? {} : { "content-type": "application/json" }),
      ...(options.admin ? { authorization: `Bearer ${testSecrets.adminToken}` } : {}),
      ...options.headers,
    },
    ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
  });
  const text = await response.body.text();
  const setCookie = response.headers["set-cookie"];
  return {
    status: response.statusCode,
    location: response.headers.location as string | undefined,
    cookies: setCookie === undefined ? [] : Array.isArray(setCookie) ? setCookie : [setCookie],
    json: () => JSON.parse(text) as Record<string, unknown>,
  };
}

function isSecure(cookie: string): boolean {
  return cookie.split(";").some((attribute) => attribute.trim().toLowerCase() === "secure");
}

describe("PUBLIC_URL: the origin browsers reach the gateway at", () => {
  it("names the OpenID Connect callback at the public origin, and its transaction cookie is Secure", async () => {
    const started = await forwarded(behindProxy, "GET", "/console/sign-in/oidc");
    expect(started.status).toBe(303);
    const authorization = new URL(started.location!);
    expect(authorization.origin).toBe(provider.issuer);
    expect(authorization.searchParams.get("redirect_uri")).toBe(`${publicUrl}/console/oidc/callback`);
    expect(started.cookies.filter((cookie) => cookie.startsWith("oidc_sign_in="))).toHaveLength(1);
    expect(started.cookies.every(isSecure)).toBe(true);

    const control = await forwarded(direct, "GET", "/console/sign-in/oidc");
    expect(new URL(control.location!).searchParams.get("redirect_uri")).toBe(
      `http://${internalHost}/console/oidc/callback`,
    );
    expect(control.cookies.some(isSecure)).toBe(false);
  });

  it("mints sign-in links at the public origin, and the session they open is a Secure cookie", async () => {
    const minted = await forwarded(behindProxy, "POST", "/admin/sign-in-links", {
      admin: true,
      body: { userId: "mina" },
    });
    expect(minted.status).toBe(201);
    const { path, url } = minted.json() as { path: string; url: string };
    expect(url).toBe(`${publicUrl}${path}`);
    // Opened as a browser opens a pasted link.
    const opened = { headers: { "sec-fetch-site": "none" } };
    const signedIn = await forwarded(behindProxy, "GET", path, opened);
    expect(signedIn.status).toBe(303);
    expect(signedIn.cookies.some((cookie) => cookie.startsWith("session="))).toBe(true);
    expect(signedIn.cookies.every(isSecure)).toBe(true);

    const control = await forwarded(direct, "POST", "/admin/sign-in-links", {
      admin: true,
      body: { userId: "mina" },
    });
    const controlLink = control.json() as { path: string; url: string };
    expect(controlLink.url).toBe(`http://${internalHost}${controlLink.path}`);
    const controlSignIn = await forwarded(direct, "GET", controlLink.path, opened);
    expect(controlSignIn.cookies.some(isSecure)).toBe(false);
  });

  it("sets the exchanged session cookie Secure", async () => {
    const token = await behindProxy.session("mina");
    const exchanged = await forwarded(behindProxy, "POST", "/console/api/session", { body: { token } });
    expect(exchanged.status).toBe(200);
    expect(exchanged.cookies.some((cookie) => cookie.startsWith("session="))).toBe(true);
    expect(exchanged.cookies.every(isSecure)).toBe(true);
  });

  it("names the public base URL when a client calls a wrong one", async () => {
    const missed = await forwarded(behindProxy, "POST", "/v1/chat/completions", { body: {} });
    expect(missed.status).toBe(404);
    expect((missed.json().error as { message: string }).message).toContain(`base URL is ${publicUrl}/llm/v1`);
  });

  it("takes an origin only, and refuses one with a path, query or credentials by name", () => {
    expect(loadConfig({ PUBLIC_URL: "https://llm.example.com/" }).publicUrl?.origin).toBe(
      "https://llm.example.com",
    );
    expect(loadConfig({}).publicUrl).toBeUndefined();
    for (const value of [
      "https://llm.example.com/gateway",
      "https://llm.example.com/?a=1",
      "https://user:secret@llm.example.com",
      "ftp://llm.example.com",
      "https://",
    ]) {
      expect(() => loadConfig({ PUBLIC_URL: value }), value).toThrow(ConfigError);
      expect(() => loadConfig({ PUBLIC_URL: value }), value).toThrow(/PUBLIC_URL/);
      expect(() => loadConfig({ PUBLIC_URL: value }), value).not.toThrow(/secret/);
    }
  });
});
