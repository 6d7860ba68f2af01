import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import express, { type Request, type Response, Router } from "express";
import type { Logger } from "pino";
import { z } from "zod";
import { sessionLimits } from "../../kernel/limits";
import type { OidcSignIn } from "../../sessions/oidc-sign-in";
import { type Session, type SessionTokens, secondsUntilExpiry } from "../../sessions/session-tokens";
import { apiErrors, sessionRequiredMessages, validationErrorOf } from "../api-error";
import { reachedOverHttps } from "../middleware/public-origin";
import { closedBodySchema } from "../wire/closed-object-schema";
import {
  adminCookieName,
  adminHintCookieName,
  type ConsoleAuth,
  cookieOf,
  csrfHeaderName,
  sessionCookieName,
} from "./console-auth";
import { languageOf } from "./console-server-page";
import { mountOidcRoutes } from "./oidc-routes";
import { signInConfirmationPage } from "./sign-in-confirmation-page";

/**
 * The web console (issue #15), served by the gateway under /console:
 * - the built single-page app from `console/dist` — hashed assets `immutable` for a year, `index.html`
 *   `no-cache` so a new build is picked up at once; any other /console path answers the page (client routes);
 * - `/console/api/session` and `/console/api/admin-session`: a session token or the admin token exchanged
 *   once for an httpOnly, SameSite=Strict cookie, answered with the cookie's CSRF token, which the page keeps in
 *   memory only and sends on every write; their DELETE signs out, ending the session for every process;
 * - `/console/sign-in?code=…`: the first-start banner's one-time link;
 * - `/console/sign-in/oidc` and `/console/oidc/callback`: sign-in by OpenID Connect when configured, and
 *   `/console/api/sign-in-options` telling the page whether to offer it.
 */

/**
 * Where the built console is: beside the sources when run from them (`npm start`), or under the working
 * directory when run as the bundle (`dist/main.js` in the image, whose WORKDIR holds `console/dist`).
 */
export const consoleDistDirectory =
  [fileURLToPath(new URL("../../../console/dist", import.meta.url)), path.resolve("console/dist")].find(
    (candidate) => existsSync(path.join(candidate, "index.html")),
  ) ?? path.resolve("console/dist");
export const consoleSessionTtlSeconds = sessionLimits.sessionTtlSecondsDefault;

const sessionBody = closedBodySchema({ token: z.string().min(1).max(4_096) });
const adminSessionBody = closedBodySchema({ adminToken: z.string().min(1).max(4_096) });

interface ConsoleRouterOptions {
  sessions: SessionTokens;
  consoleAuth: ConsoleAuth;
  adminEnabled: boolean;
  /** Sign-in by OpenID Connect; absent when OIDC_ISSUER is unset. */
  oidc?: OidcSignIn | undefined;
  /** Records the provider's role claim at its sign-in; absent unless OIDC_ROLE_CLAIM is set. */
  recordRoleClaim?: ((session: Session, correlationId: string) => Promise<void>) | undefined;
  logger?: Logger;
  distDirectory?: string;
}

export function createConsoleRouter(options: ConsoleRouterOptions): Router {
  const distDirectory = options.distDirectory ?? consoleDistDirectory;
  const router = Router();
  mountSessionRoutes(router, options);
  mountAdminSessionRoutes(router, options);
  router.get("/api/sign-in-options", (_request, response) => {
    response.json({ oidc: options.oidc !== undefined });
  });
  // Past the session routes, an unknown /api path is a 404 rather than the page.
  router.use("/api", (_request, _response, next) => next(notFound()));
  mountSignInRoute(router, options);
  mountOidcRoutes(router, {
    oidc: options.oidc,
    consoleAuth: options.consoleAuth,
    signIn: (request, response, session) => signIn(options.sessions, request, response, session),
    recordRoleClaim: options.recordRoleClaim,
    logger: options.logger,
  });
  mountConsolePage(router, distDirectory);
  return router;
}

/** The session token exchanged for the session cookie, read back, and cleared. */
function mountSessionRoutes(router: Router, { sessions, consoleAuth }: ConsoleRouterOptions): void {
  router.post("/api/session", async (request, response) => {
    requireJson(request);
    const parsed = sessionBody.safeParse(request.body ?? {});
    if (!parsed.success) throw validationErrorOf(parsed.error);
    const session = await sessions.verify(parsed.data.token);
    if (!session) throw apiErrors.unauthorized("The session token is invalid, expired or signed out");
    // The cookie dies with its token: a browser then asks for a sign-in instead of sending a dead session.
    const ttlSeconds = Math.min(consoleSessionTtlSeconds, secondsUntilExpiry(parsed.data.token));
    setCookie(request, response, sessionCookieName, parsed.data.token, ttlSeconds);
    response.json({ ...sessionView(session), csrfToken: consoleAuth.csrfTokenOf(parsed.data.token) });
  });

  router.get("/api/session", async (request, response) => {
    const token = cookieOf(request.headers.cookie, sessionCookieName);
    const session = token ? await sessions.verify(token) : undefined;
    if (!token || !session) throw apiErrors.unauthorized(sessionRequiredMessages.noSession);
    response.json({ ...sessionView(session), csrfToken: consoleAuth.csrfTokenOf(token) });
  });

  router.delete("/api/session", async (request, response) => {
    // Without the cookie (it expired, or another tab signed out) there is nothing to end: not an error.
    const token = cookieOf(request.headers.cookie, sessionCookieName);
    if (token !== undefined) {
      requireCsrf(request, consoleAuth, sessionCookieName);
      // The session ends, not only this browser's cookie: a copy of it, or its token in an API client, is
      // refused by every gateway process from now. Should that fail, the cookie stays and the answer says so.
      await sessions.end(token);
    }
    clearCookie(request, response, sessionCookieName);
    response.json({ signedOut: true });
  });
}

/** What the page is told of its session: who, which organization, the role the provider claimed. */
function sessionView({ userId, organizationId, providerRole }: Session) {
  return { userId, organizationId, ...(providerRole === undefined ? {} : { providerRole }) };
}

/** The admin token exchanged for the admin cookie, read back, and cleared. */
function mountAdminSessionRoutes(router: Router, { consoleAuth, adminEnabled }: ConsoleRouterOptions): void {
  router.post("/api/admin-session", async (request, response) => {
    requireJson(request);
    const parsed = adminSessionBody.safeParse(request.body ?? {});
    if (!parsed.success) throw validationErrorOf(parsed.error);
    if (!adminEnabled)
      throw apiErrors.unauthorized("The admin API is off: start the gateway with ADMIN_TOKEN");
    if (!consoleAuth.adminTokenMatches(parsed.data.adminToken)) {
      throw apiErrors.unauthorized(
        "The admin token was not accepted: use the ADMIN_TOKEN the gateway runs with (embedded: in ./.data/)",
      );
    }
    const cookie = await consoleAuth.mintAdminCookie();
    setCookie(request, response, adminCookieName, cookie, sessionLimits.adminCookieTtlSeconds);
    setAdminHint(request, response, sessionLimits.adminCookieTtlSeconds);
    response.json({ csrfToken: consoleAuth.csrfTokenOf(cookie) });
  });

  router.get("/api/admin-session", async (request, response) => {
    const cookie = cookieOf(request.headers.cookie, adminCookieName);
    if (!cookie || !(await consoleAuth.adminCookieIsValid(cookie))) {
      // A hint left by an expired admin cookie goes, so the page stops asking.
      clearAdminHint(request, response);
      throw apiErrors.unauthorized("Admin token required");
    }
    response.json({ csrfToken: consoleAuth.csrfTokenOf(cookie) });
  });

  router.delete("/api/admin-session", async (request, response) => {
    const cookie = cookieOf(request.headers.cookie, adminCookieName);
    if (cookie !== undefined) {
      requireCsrf(request, consoleAuth, adminCookieName);
      await consoleAuth.endAdminCookie(cookie);
    }
    clearCookie(request, response, adminCookieName);
    clearAdminHint(request, response);
    response.json({ signedOut: true });
  });
}

/** The first-start banner's one-time link: redeems the code for a session cookie, then opens the console. */
function mountSignInRoute(router: Router, { sessions, consoleAuth }: ConsoleRouterOptions): void {
  router.get("/sign-in", async (request, response) => {
    response.setHeader("cache-control", "no-store");
    response.setHeader("referrer-policy", "no-referrer");
    const code = typeof request.query.code === "string" ? request.query.code : "";
    // A browser says where a navigation came from (Fetch Metadata). Opened directly (typed, pasted, from a
    // terminal: "none") or from this site, the link signs in at once. Led here by another site, ask first,
    // redeeming nothing; so too for a request that says nothing (a chat's link preview, a mail scanner) or
    // only asks for headers: a program fetching the link must not spend the person's one sign-in.
    const from = request.headers["sec-fetch-site"];
    const openedByThePerson = request.method === "GET" && (from === "none" || from === "same-origin");
    if (code && !openedByThePerson) {
      response
        .status(200)
        .type("text/html")
        .send(signInConfirmationPage(code, languageOf(request.headers["accept-language"])));
      return;
    }
    const session = code ? await consoleAuth.redeemSignInCode(code) : undefined;
    if (!session) {
      response.redirect(303, "/console/?signIn=expired");
      return;
    }
    await signIn(sessions, request, response, session);
    response.redirect(303, "/console/");
  });
}

/** Every console sign-in ends here: a session token of C4 in the session cookie. */
async function signIn(sessions: SessionTokens, request: Request, response: Response, session: Session) {
  const { token } = await sessions.mint(session, consoleSessionTtlSeconds);
  setCookie(request, response, sessionCookieName, token, consoleSessionTtlSeconds);
}

/** The built app: hashed assets cached for a year, other files revalidated, any other path the page. */
function mountConsolePage(router: Router, distDirectory: string): void {
  router.use(
    "/assets",
    express.static(path.join(distDirectory, "assets"), {
      immutable: true,
      maxAge: "365d",
      index: false,
    }),
    (_request: Request, _response: Response, next: (error: unknown) => void) => next(notFound()),
  );
  router.use(
    express.static(distDirectory, {
      index: false,
      setHeaders: (response) => response.setHeader("cache-control", "no-cache"),
    }),
  );
  router.get("/{*rest}", (_request, response) => {
    const index = path.join(distDirectory, "index.html");
    if (!existsSync(index)) {
      response
        .status(503)
        .type("text/plain")
        .send("The console is not built: run `npm run build:console` (npm start builds it).");
      return;
    }
    response.setHeader("cache-control", "no-cache");
    response.sendFile(index);
  });
}

function notFound(): Error {
  return Object.assign(new Error("not found"), { notFound: true });
}

function requireJson(request: Request): void {
  // A cross-site form cannot send JSON without a CORS preflight, which this origin never grants: no login CSRF.
  if (!request.is("application/json")) throw apiErrors.validation("The body must be application/json");
}

function requireCsrf(request: Request, consoleAuth: ConsoleAuth, cookieName: string): void {
  const cookie = cookieOf(request.headers.cookie, cookieName);
  const presented = request.headers[csrfHeaderName];
  if (
    !cookie ||
    !consoleAuth.csrfTokenMatches(cookie, typeof presented === "string" ? presented : undefined)
  ) {
    throw apiErrors.unauthorized("The x-csrf-token header is missing or wrong");
  }
}

function setCookie(request: Request, response: Response, name: string, value: string, ttlSeconds: number) {
  response.cookie(name, value, {
    httpOnly: true,
    sameSite: "strict",
    secure: reachedOverHttps(request),
    path: "/",
    maxAge: ttlSeconds * 1_000,
  });
}

function clearCookie(request: Request, response: Response, name: string) {
  response.clearCookie(name, {
    httpOnly: true,
    sameSite: "strict",
    secure: reachedOverHttps(request),
    path: "/",
  });
}

/** The page-readable hint that an admin cookie exists (console-auth.ts, adminHintCookieName). */
function setAdminHint(request: Request, response: Response, ttlSeconds: number) {
  response.cookie(adminHintCookieName, "1", {
    httpOnly: false,
    sameSite: "strict",
    secure: reachedOverHttps(request),
    path: "/console",
    maxAge: ttlSeconds * 1_000,
  });
}

function clearAdminHint(request: Request, response: Response) {
  response.clearCookie(adminHintCookieName, {
    sameSite: "strict",
    secure: reachedOverHttps(request),
    path: "/console",
  });
}
