import type { Request, Response, Router } from "express";
import type { Logger } from "pino";
import { sessionLimits } from "../../kernel/limits";
import { type OidcSignIn, OidcSignInRefused } from "../../sessions/oidc-sign-in";
import type { Session } from "../../sessions/session-tokens";
import { publicOriginOf, reachedOverHttps } from "../middleware/public-origin";
import { requestIdOf } from "../middleware/request-id";
import { type ConsoleAuth, cookieOf, oidcTransactionCookieName } from "./console-auth";
import { languageOf } from "./console-server-page";
import { oidcRefusalPage, refusalStatusOf } from "./oidc-refusal-page";

/**
 * Console sign-in by OpenID Connect (C14): `GET /console/sign-in/oidc` sends the browser to the provider with
 * a fresh state, nonce and PKCE challenge (kept in a signed cookie), and `GET /console/oidc/callback` checks
 * them, has openid-client exchange the code and verify the ID token, and signs the claimed user in as the
 * one-time links do. Every refusal is a page saying why.
 */

export const oidcCallbackPath = "/console/oidc/callback";

interface OidcRouteOptions {
  oidc: OidcSignIn | undefined;
  consoleAuth: ConsoleAuth;
  /** Mints the session and sets its cookie, as every console sign-in does. */
  signIn(request: Request, response: Response, session: Session): Promise<void>;
  /**
   * With the provider's role claim configured: records the role it claims before the session is minted, so
   * that the user's earlier sessions act by it too (C14: a provider's role claim wins).
   */
  recordRoleClaim?: ((session: Session, correlationId: string) => Promise<void>) | undefined;
  logger: Logger | undefined;
}

export function mountOidcRoutes(router: Router, options: OidcRouteOptions): void {
  router.get("/sign-in/oidc", async (request, response) => {
    noStore(response);
    try {
      const oidc = configured(options.oidc);
      const { authorizationUrl, transaction } = await oidc.start(callbackUrlOf(request));
      const cookie = await options.consoleAuth.mintOidcTransaction(transaction);
      response.cookie(oidcTransactionCookieName, cookie, transactionCookieOptions(request));
      response.redirect(303, authorizationUrl.href);
    } catch (error) {
      refuse(request, response, error, options.logger);
    }
  });

  router.get("/oidc/callback", async (request, response) => {
    noStore(response);
    // One attempt per transaction: whatever happens next, the cookie goes.
    response.clearCookie(oidcTransactionCookieName, transactionCookieOptions(request, { clearing: true }));
    try {
      const oidc = configured(options.oidc);
      const transaction = await options.consoleAuth.oidcTransactionOf(
        cookieOf(request.headers.cookie, oidcTransactionCookieName),
      );
      if (!transaction) throw new OidcSignInRefused("transaction-missing");
      const callbackUrl = new URL(request.originalUrl, transaction.redirectUri);
      const session = await oidc.finish(callbackUrl, transaction);
      await options.recordRoleClaim?.(session, requestIdOf(response.locals));
      await options.signIn(request, response, session);
      options.logger?.info(
        { userId: session.userId, organizationId: session.organizationId },
        "oidc sign-in",
      );
      response.redirect(303, "/console/");
    } catch (error) {
      refuse(request, response, error, options.logger);
    }
  });
}

function configured(oidc: OidcSignIn | undefined): OidcSignIn {
  if (!oidc) throw new OidcSignInRefused("not-configured");
  return oidc;
}

/** The callback at the public origin; register `<origin>/console/oidc/callback` at the provider. */
function callbackUrlOf(request: Request): string {
  return `${publicOriginOf(request)}${oidcCallbackPath}`;
}

/**
 * SameSite=Lax, not Strict like the session: the provider's redirect back is a cross-site navigation, which
 * carries Lax cookies only. Scoped to the callback's path, and dead in minutes.
 */
function transactionCookieOptions(request: Request, { clearing = false } = {}) {
  return {
    httpOnly: true,
    sameSite: "lax" as const,
    secure: reachedOverHttps(request),
    path: "/console/oidc",
    ...(clearing ? {} : { maxAge: sessionLimits.oidcTransactionTtlSeconds * 1_000 }),
  };
}

function refuse(request: Request, response: Response, error: unknown, logger: Logger | undefined): void {
  // Every failure of the provider's part is an OidcSignInRefused (oidc-sign-in.ts): anything else is the
  // gateway's own, recording the role claim or the session, and is said as such, not blamed on the provider.
  const refusal =
    error instanceof OidcSignInRefused
      ? error
      : new OidcSignInRefused("gateway-unavailable", undefined, { cause: error });
  const cause = refusal.cause instanceof Error ? refusal.cause : undefined;
  const level = refusal.reason === "gateway-unavailable" ? "error" : "warn";
  logger?.[level](
    {
      reason: refusal.reason,
      detail: refusal.detail,
      cause: cause && { name: cause.name, message: cause.message, code: (cause as { code?: string }).code },
    },
    "oidc sign-in refused",
  );
  response
    .status(refusalStatusOf(refusal.reason))
    .type("html")
    .send(oidcRefusalPage(refusal, languageOf(request.headers["accept-language"])));
}

function noStore(response: Response): void {
  response.setHeader("cache-control", "no-store");
  response.setHeader("referrer-policy", "no-referrer");
}
