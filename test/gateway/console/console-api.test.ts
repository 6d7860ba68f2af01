import { readdir } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { consoleDistDirectory } from "../../../src/gateway/console/console-router";
import { poll, topUp } from "../../console/support/patient";
import { type GatewayHarness, startGatewayHarness, testSecrets } from "../../support/gateway-harness";

/**
 * The console's server side through the real HTTP edge: static serving and its cache headers, the cookie
 * exchanges and their CSRF tokens, the one-time sign-in link, and the usage-by-day read with its tenancy.
 */

let harness: GatewayHarness;

beforeAll(async () => {
  harness = await startGatewayHarness({
    label: "console_api",
    billing: {},
    service: { adminToken: testSecrets.adminToken },
  });
}, 60_000);

afterAll(async () => {
  await harness?.close();
});

function setCookieOf(response: Response, name: string): string {
  const header = response.headers.getSetCookie().find((cookie) => cookie.startsWith(`${name}=`));
  if (!header) throw new Error(`no Set-Cookie ${name}`);
  return header;
}

function cookieValueOf(setCookie: string): string {
  return setCookie.split(";")[0]!.split("=").slice(1).join("=");
}

async function exchangeSession(token: string): Promise<{ cookie: string; csrfToken: string }> {
  const response = await fetch(`${harness.url}/console/api/session`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ token }),
  });
  expect(response.status).toBe(200);
  const body = (await response.json()) as { csrfToken: string };
  return { cookie: `session=${cookieValueOf(setCookieOf(response, "session"))}`, csrfToken: body.csrfToken };
}

describe("serving the console", () => {
  it("redirects / to the console and serves the page no-cache, hashed assets immutable", async () => {
    const root = await fetch(`${harness.url}/`, { redirect: "manual" });
    expect(root.status).toBe(302);
    expect(root.headers.get("location")).toBe("/console/");

    const page = await fetch(`${harness.url}/console/`);
    expect(page.status).toBe(200);
    expect(page.headers.get("cache-control")).toBe("no-cache");
    const html = await page.text();
    expect(html).toContain('<div id="root">');

    const clientRoute = await fetch(`${harness.url}/console/usage`);
    expect(clientRoute.status).toBe(200);
    expect(await clientRoute.text()).toBe(html);

    // The entry script the page names, and the chunks it loads on demand (the chart pages), all immutable.
    const scripts = (await readdir(path.join(consoleDistDirectory, "assets"))).filter((name) =>
      name.endsWith(".js"),
    );
    const entry = scripts.find((name) => html.includes(`/console/assets/${name}`));
    expect(entry).toBeDefined();
    expect(scripts.length).toBeGreaterThan(1);
    for (const asset of scripts) {
      const script = await fetch(`${harness.url}/console/assets/${asset}`);
      expect(script.status, asset).toBe(200);
      expect(script.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    }

    const missing = await fetch(`${harness.url}/console/assets/nope-123.js`);
    expect(missing.status).toBe(404);
    const unknownApi = await fetch(`${harness.url}/console/api/nope`);
    expect(unknownApi.status).toBe(404);
    expect(await unknownApi.json()).toMatchObject({ status: 120 });
  });
});

describe("the session cookie", () => {
  it("is set httpOnly and SameSite=Strict only for a valid token sent as JSON", async () => {
    const token = await harness.session("sora");
    const refused = await fetch(`${harness.url}/console/api/session`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ token: `${token}x` }),
    });
    expect(refused.status).toBe(401);
    expect(refused.headers.getSetCookie()).toEqual([]);

    const form = await fetch(`${harness.url}/console/api/session`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: `token=${token}`,
    });
    expect(form.status).toBe(400);

    const accepted = await fetch(`${harness.url}/console/api/session`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ token }),
    });
    const setCookie = setCookieOf(accepted, "session");
    expect(setCookie).toMatch(/HttpOnly/);
    expect(setCookie).toMatch(/SameSite=Strict/);
    expect(setCookie).toMatch(/Path=\//);
    expect(await accepted.json()).toMatchObject({ userId: "sora", organizationId: null });
  });

  it("needs the CSRF token on writes carried by the cookie, not on bearer writes", async () => {
    const token = await harness.session("sora");
    const { cookie, csrfToken } = await exchangeSession(token);
    const issue = (headers: Record<string, string>) =>
      fetch(`${harness.url}/llm/apis`, {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body: JSON.stringify({ name: "csrf test" }),
      });

    expect((await issue({ cookie })).status).toBe(401);
    expect((await issue({ cookie, "x-csrf-token": `${csrfToken}x` })).status).toBe(401);
    const otherSession = await exchangeSession(await harness.session("someone-else"));
    expect((await issue({ cookie, "x-csrf-token": otherSession.csrfToken })).status).toBe(401);
    expect((await issue({ cookie, "x-csrf-token": csrfToken })).status).toBe(201);
    expect((await issue({ authorization: `Bearer ${token}` })).status).toBe(201);
    // Reads need no token.
    expect((await fetch(`${harness.url}/llm/apis`, { headers: { cookie } })).status).toBe(200);
    // Signing out needs it too.
    const signOut = (headers: Record<string, string>) =>
      fetch(`${harness.url}/console/api/session`, { method: "DELETE", headers });
    expect((await signOut({ cookie })).status).toBe(401);
    const signedOut = await signOut({ cookie, "x-csrf-token": csrfToken });
    expect(signedOut.status).toBe(200);
    expect(setCookieOf(signedOut, "session")).toMatch(/Expires=Thu, 01 Jan 1970/);
  });

  it("signs out a browser whose cookie is already gone without an error, as the admin cookie does", async () => {
    for (const path of ["/console/api/session", "/console/api/admin-session"]) {
      const signedOut = await fetch(`${harness.url}${path}`, { method: "DELETE" });
      expect(signedOut.status, path).toBe(200);
      expect(await signedOut.json(), path).toEqual({ signedOut: true });
    }
  });

  it("gives the cookie no longer a life than its token's", async () => {
    const { token } = await harness.service.sessions.mint({ userId: "sora", organizationId: null }, 60);
    const accepted = await fetch(`${harness.url}/console/api/session`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ token }),
    });
    expect(accepted.status).toBe(200);
    const maxAge = Number(/Max-Age=(\d+)/.exec(setCookieOf(accepted, "session"))?.[1]);
    expect(maxAge).toBeGreaterThanOrEqual(58);
    expect(maxAge).toBeLessThanOrEqual(60);
  });
});

describe("the admin cookie", () => {
  it("is exchanged for the admin token, opens the admin API with CSRF on writes, and is no user session", async () => {
    const wrong = await fetch(`${harness.url}/console/api/admin-session`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ adminToken: "not-the-token" }),
    });
    expect(wrong.status).toBe(401);

    const exchanged = await fetch(`${harness.url}/console/api/admin-session`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ adminToken: testSecrets.adminToken }),
    });
    expect(exchanged.status).toBe(200);
    const setCookie = setCookieOf(exchanged, "admin_session");
    expect(setCookie).toMatch(/HttpOnly/);
    expect(setCookie).toMatch(/SameSite=Strict/);
    expect(setCookie).not.toContain(testSecrets.adminToken);
    const cookie = `admin_session=${cookieValueOf(setCookie)}`;
    const { csrfToken } = (await exchanged.json()) as { csrfToken: string };

    expect((await fetch(`${harness.url}/admin/console/prices`, { headers: { cookie } })).status).toBe(200);
    const prices = await fetch(`${harness.url}/admin/console/prices`, { headers: { cookie } });
    const priceRows = ((await prices.json()) as { data: { model: string; inputUsdPer1M: string }[] }).data;
    expect(priceRows).toHaveLength(23);

    const credit = (headers: Record<string, string>) =>
      fetch(`${harness.url}/admin/accounts/user/sora/credits`, {
        method: "POST",
        headers: { "content-type": "application/json", cookie, ...headers },
        body: JSON.stringify({ amountWon: "100", reference: "console test" }),
      });
    expect((await credit({})).status).toBe(401);
    expect((await credit({ "x-csrf-token": csrfToken })).status).toBe(201);
    const events = (await (
      await fetch(`${harness.url}/admin/events?stream=account-user-sora`, { headers: { cookie } })
    ).json()) as { data: { metadata: { actor: string } }[] };
    expect(events.data.at(-1)?.metadata.actor).toBe("admin:console");

    // Neither cookie opens the other realm.
    const asUser = await fetch(`${harness.url}/llm/apis`, {
      headers: { cookie: `session=${cookieValueOf(setCookie)}` },
    });
    expect(asUser.status).toBe(401);
    const { cookie: userCookie } = await exchangeSession(await harness.session("admin"));
    const userAsAdmin = await fetch(`${harness.url}/admin/console/prices`, {
      headers: { cookie: `admin_session=${userCookie.slice("session=".length)}` },
    });
    expect(userAsAdmin.status).toBe(401);
  });
});

describe("the first-start sign-in link", () => {
  it("signs in once, then sends the browser to the sign-in page", async () => {
    const code = await harness.service.consoleAuth.mintSignInCode({ userId: "demo", organizationId: null });
    // Opened from the start banner in a terminal: the browser says "none".
    const opened = { redirect: "manual", headers: { "sec-fetch-site": "none" } } as const;
    const first = await fetch(`${harness.url}/console/sign-in?code=${code}`, opened);
    expect(first.status).toBe(303);
    expect(first.headers.get("location")).toBe("/console/");
    const session = cookieValueOf(setCookieOf(first, "session"));
    expect(await harness.service.sessions.verify(session)).toEqual({ userId: "demo", organizationId: null });

    const again = await fetch(`${harness.url}/console/sign-in?code=${code}`, opened);
    expect(again.status).toBe(303);
    expect(again.headers.get("location")).toBe("/console/?signIn=expired");
    expect(again.headers.getSetCookie()).toEqual([]);
    // A sign-in code is not a session token.
    const asBearer = await fetch(`${harness.url}/llm/apis`, { headers: { authorization: `Bearer ${code}` } });
    expect(asBearer.status).toBe(401);
  });
});

describe("a sign-in link another site leads to (login CSRF)", () => {
  it("asks before signing in, redeeming nothing, and its own link signs in", async () => {
    const code = await harness.service.consoleAuth.mintSignInCode({ userId: "eve", organizationId: null });
    for (const from of ["cross-site", "same-site"]) {
      const led = await fetch(`${harness.url}/console/sign-in?code=${code}`, {
        redirect: "manual",
        headers: { "sec-fetch-site": from, "accept-language": "ko-KR,ko;q=0.9" },
      });
      expect(led.status, from).toBe(200);
      expect(led.headers.getSetCookie()).toEqual([]);
      const page = await led.text();
      expect(page).toContain("콘솔에 로그인할까요?");
      expect(page).toContain(`href="/console/sign-in?code=${code}"`);
    }

    // Following the page's own link is a navigation of this site: it signs in, once.
    const confirmed = await fetch(`${harness.url}/console/sign-in?code=${code}`, {
      redirect: "manual",
      headers: { "sec-fetch-site": "same-origin" },
    });
    expect(confirmed.status).toBe(303);
    expect(confirmed.headers.get("location")).toBe("/console/");
    const session = cookieValueOf(setCookieOf(confirmed, "session"));
    expect(await harness.service.sessions.verify(session)).toEqual({ userId: "eve", organizationId: null });
  });

  it("given a link fetched by a program (a chat's link preview, a mail scanner: no Sec-Fetch-Site, or HEAD), then it asks and redeems nothing, so the person's own click still signs in", async () => {
    const code = await harness.service.consoleAuth.mintSignInCode({ userId: "mina", organizationId: null });
    const link = `${harness.url}/console/sign-in?code=${code}`;
    const preview = await fetch(link, {
      redirect: "manual",
      headers: { "user-agent": "Slackbot-LinkExpanding 1.0" },
    });
    expect(preview.status).toBe(200);
    expect(preview.headers.getSetCookie()).toEqual([]);
    expect(await preview.text()).toContain(`href="/console/sign-in?code=${code}"`);
    const probed = await fetch(link, {
      method: "HEAD",
      redirect: "manual",
      headers: { "sec-fetch-site": "none" },
    });
    expect(probed.headers.getSetCookie()).toEqual([]);

    const clicked = await fetch(link, { redirect: "manual", headers: { "sec-fetch-site": "none" } });
    expect(clicked.status).toBe(303);
    expect(clicked.headers.get("location")).toBe("/console/");
  });

  it("signs in at once when the link is opened directly (typed, pasted, from the start banner)", async () => {
    const code = await harness.service.consoleAuth.mintSignInCode({ userId: "demo", organizationId: null });
    const opened = await fetch(`${harness.url}/console/sign-in?code=${code}`, {
      redirect: "manual",
      headers: { "sec-fetch-site": "none" },
    });
    expect(opened.status).toBe(303);
    expect(opened.headers.get("location")).toBe("/console/");
  });
});

describe("sign-in by OpenID Connect, not configured", () => {
  it("is not offered, and its routes answer a page saying it is not set up", async () => {
    const options = await fetch(`${harness.url}/console/api/sign-in-options`);
    expect(await options.json()).toEqual({ oidc: false });
    for (const path of ["/console/sign-in/oidc", "/console/oidc/callback?code=a&state=b"]) {
      const response = await fetch(`${harness.url}${path}`, { redirect: "manual" });
      expect(response.status, path).toBe(404);
      expect(await response.text(), path).toContain('data-reason="not-configured"');
    }
  });
});

describe("GET /llm/usage", { timeout: 90_000 }, () => {
  it("reads usage per Seoul day, model and key, for the session's own account only", async () => {
    await topUp(harness, { kind: "user", id: "hana" }, "1000");
    await topUp(harness, { kind: "organization", id: "orbit" }, "1000");
    const hana = await harness.session("hana", "orbit");
    const personalKey = await harness.issueKey(hana);
    const organizationKey = await harness.issueKey(hana, { isOrganization: true, name: "shared" });
    for (const key of [personalKey.key, personalKey.key, organizationKey.key]) {
      await harness.openai(key).chat.completions.create({
        model: "alpha-5.4-mini",
        messages: [{ role: "user", content: "count me" }],
      });
    }
    const usage = async (token: string, query: string) => {
      const response = await fetch(`${harness.url}/llm/usage${query}`, {
        headers: { authorization: `Bearer ${token}` },
      });
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    };
    type Rows = { data: { day: string; keyId: string; requests: number; amountWon: string }[] };
    await poll(async () => ((await usage(hana, "")).body as unknown as Rows).data[0]?.requests).toBe(2);
    await poll(
      async () => ((await usage(hana, "?isOrganization=true")).body as unknown as Rows).data.length,
    ).toBe(1);

    const personal = (await usage(hana, "")).body as unknown as Rows & { account: unknown };
    expect(personal.account).toEqual({ kind: "user", id: "hana" });
    expect(personal.data).toHaveLength(1);
    expect(personal.data[0]).toMatchObject({ keyId: personalKey.uuid, requests: 2 });
    const billing = (await (
      await fetch(`${harness.url}/llm/billing`, { headers: { authorization: `Bearer ${hana}` } })
    ).json()) as { data: { amountWon: string; startedAt: string }[] };
    const billedMicroWon = billing.data.reduce(
      (sum, charge) => sum + BigInt(Math.round(Number(charge.amountWon) * 1e6)),
      0n,
    );
    expect(BigInt(Math.round(Number(personal.data[0]!.amountWon) * 1e6))).toBe(billedMicroWon);

    const organization = (await usage(hana, "?isOrganization=true")).body as unknown as Rows;
    expect(organization.data[0]).toMatchObject({ keyId: organizationKey.uuid, requests: 1 });

    const day = personal.data[0]!.day;
    expect(((await usage(hana, `?from=${day}&to=${day}`)).body as unknown as Rows).data).toHaveLength(1);
    expect(((await usage(hana, "?to=2000-01-01")).body as unknown as Rows).data).toHaveLength(0);

    // Someone else sees nothing of it; no organization, no organization usage.
    const stranger = await harness.session("stranger");
    expect(((await usage(stranger, "")).body as unknown as Rows).data).toEqual([]);
    expect(await usage(stranger, "?isOrganization=true")).toMatchObject({
      status: 400,
      body: { status: 100 },
    });
    expect(await usage(hana, "?from=2026-02-30")).toMatchObject({ status: 400, body: { status: 100 } });
    expect(await usage(hana, "?from=2026-11-02&to=2026-11-01")).toMatchObject({ status: 400 });
    expect((await fetch(`${harness.url}/llm/usage`)).status).toBe(401);
  });
});
