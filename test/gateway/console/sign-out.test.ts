import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sessionRequiredMessages } from "../../../src/gateway/api-error";
import { createTestDatabase, type TestDatabase } from "../../support/database";
import { type GatewayHarness, startGatewayHarness, testSecrets } from "../../support/gateway-harness";

/**
 * Signing out ends the session, not only the browser's cookie: a copy of the cookie (another browser profile,
 * a proxy's log, a stolen cookie) or the token it carries is refused afterwards as no session (401/110), by
 * the gateway that signed it out and by every other gateway process on the same database. The same holds for
 * the admin console's cookie. Other sessions, of the same user too, go on.
 */

let database: TestDatabase;
let signingOut: GatewayHarness;
let other: GatewayHarness;

beforeAll(async () => {
  database = await createTestDatabase("console_sign_out");
  signingOut = await startGatewayHarness({ database, service: { adminToken: testSecrets.adminToken } });
  other = await startGatewayHarness({ database, service: { adminToken: testSecrets.adminToken } });
}, 90_000);

afterAll(async () => {
  await other?.close();
  await signingOut?.close();
  await database?.drop();
});

function cookieValueOf(response: Response, name: string): string {
  const header = response.headers.getSetCookie().find((cookie) => cookie.startsWith(`${name}=`));
  if (!header) throw new Error(`no Set-Cookie ${name}`);
  return header.split(";")[0]!.split("=").slice(1).join("=");
}

async function signIn(token: string): Promise<{ cookie: string; csrfToken: string }> {
  const response = await fetch(`${signingOut.url}/console/api/session`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ token }),
  });
  expect(response.status).toBe(200);
  const { csrfToken } = (await response.json()) as { csrfToken: string };
  return { cookie: `session=${cookieValueOf(response, "session")}`, csrfToken };
}

async function signInAsAdmin(): Promise<{ cookie: string; csrfToken: string }> {
  const response = await fetch(`${signingOut.url}/console/api/admin-session`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ adminToken: testSecrets.adminToken }),
  });
  expect(response.status).toBe(200);
  const { csrfToken } = (await response.json()) as { csrfToken: string };
  return { cookie: `admin_session=${cookieValueOf(response, "admin_session")}`, csrfToken };
}

async function signOut(path: string, signedIn: { cookie: string; csrfToken: string }): Promise<void> {
  const response = await fetch(`${signingOut.url}${path}`, {
    method: "DELETE",
    headers: { cookie: signedIn.cookie, "x-csrf-token": signedIn.csrfToken },
  });
  expect(response.status).toBe(200);
  expect(await response.json()).toEqual({ signedOut: true });
}

async function reply(gateway: GatewayHarness, path: string, headers: Record<string, string>) {
  const response = await fetch(`${gateway.url}${path}`, { headers });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

const gateways = () =>
  [
    ["the gateway that signed out", signingOut],
    ["another gateway on the database", other],
  ] as const;

describe("signing out of the console", { timeout: 60_000 }, () => {
  it("given a copy of the session cookie, when the user signs out, then the copy and its token are no session on any gateway", async () => {
    const token = await signingOut.session("sign-out-sora");
    const signedIn = await signIn(token);
    const copy = signedIn.cookie;
    for (const [which, gateway] of gateways()) {
      expect((await reply(gateway, "/llm/apis", { cookie: copy })).status, which).toBe(200);
      expect((await reply(gateway, "/console/api/session", { cookie: copy })).status, which).toBe(200);
    }

    await signOut("/console/api/session", signedIn);

    const refused = { status: 401, body: { status: 110, message: sessionRequiredMessages.noSession } };
    for (const [which, gateway] of gateways()) {
      expect(await reply(gateway, "/llm/apis", { cookie: copy }), which).toMatchObject(refused);
      expect(await reply(gateway, "/console/api/session", { cookie: copy }), which).toMatchObject(refused);
      // The cookie's token, sent by an API client, is the same session.
      expect(await reply(gateway, "/llm/apis", { authorization: `Bearer ${token}` }), which).toMatchObject(
        refused,
      );
      // Nor is it exchanged for a cookie again.
      const exchanged = await fetch(`${gateway.url}/console/api/session`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ token }),
      });
      expect(exchanged.status, which).toBe(401);
      expect(await exchanged.json(), which).toMatchObject({ status: 110 });
      expect(exchanged.headers.getSetCookie(), which).toEqual([]);
    }
  });

  it("given two sessions of one user minted in the same second, when one signs out, then the other goes on", async () => {
    const now = new Date();
    const session = { userId: "sign-out-twice", organizationId: null };
    const first = await signIn((await signingOut.service.sessions.mint(session, 600, now)).token);
    const second = await signIn((await signingOut.service.sessions.mint(session, 600, now)).token);

    await signOut("/console/api/session", first);

    for (const [which, gateway] of gateways()) {
      expect((await reply(gateway, "/llm/apis", { cookie: first.cookie })).status, which).toBe(401);
      expect((await reply(gateway, "/llm/apis", { cookie: second.cookie })).status, which).toBe(200);
    }
  });

  it("given a session signed out, when other users sign out later, then its copy is still no session on any gateway", async () => {
    const signedOutFirst = await signIn(await signingOut.session("sign-out-first"));
    await signOut("/console/api/session", signedOutFirst);

    // Each later sign-out sweeps the ended sessions whose token expired: this one's token has not.
    for (const userId of ["sign-out-later-1", "sign-out-later-2"])
      await signOut("/console/api/session", await signIn(await signingOut.session(userId)));

    for (const [which, gateway] of gateways())
      expect((await reply(gateway, "/llm/apis", { cookie: signedOutFirst.cookie })).status, which).toBe(401);
  });

  it("given a copy of the admin cookie, when the admin signs out, then the copy opens the admin API on no gateway, and a new sign-in does", async () => {
    const signedIn = await signInAsAdmin();
    const copy = signedIn.cookie;
    for (const [which, gateway] of gateways())
      expect((await reply(gateway, "/admin/console/prices", { cookie: copy })).status, which).toBe(200);

    await signOut("/console/api/admin-session", signedIn);

    for (const [which, gateway] of gateways()) {
      expect(await reply(gateway, "/admin/console/prices", { cookie: copy }), which).toMatchObject({
        status: 401,
        body: { status: 110 },
      });
      expect(await reply(gateway, "/console/api/admin-session", { cookie: copy }), which).toMatchObject({
        status: 401,
        body: { status: 110 },
      });
    }
    const again = await signInAsAdmin();
    expect((await reply(other, "/admin/console/prices", { cookie: again.cookie })).status).toBe(200);
  });
});
