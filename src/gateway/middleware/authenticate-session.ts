import type { Request, RequestHandler } from "express";
import { looksLikeApiKey } from "../../keys/api-key-secret";
import type { Session, SessionTokens } from "../../sessions/session-tokens";
import { apiErrors, sessionRequiredMessages } from "../api-error";
import {
  type ConsoleAuth,
  cookieOf,
  csrfHeaderName,
  isSafeMethod,
  sessionCookieName,
} from "../console/console-auth";

/**
 * Key management and balance endpoints need a logged-in session: a bearer token or the `session` cookie.
 * A browser sends the cookie by itself, so a write carried by the cookie must also present the cookie's
 * CSRF token (header `x-csrf-token`) when `csrf` is given; a bearer token is never sent by itself.
 */
export function authenticateSession(tokens: SessionTokens, csrf?: ConsoleAuth): RequestHandler {
  return async (request, response, next) => {
    const bearer = bearerTokenOf(request);
    // A cookie that is not valid percent-encoding is no session: cookieOf reads it as absent.
    const token = bearer ?? cookieOf(request.headers.cookie, sessionCookieName);
    const session = token ? await tokens.verify(token) : undefined;
    if (!session) {
      // An API key where a session goes is a newcomer's first slip: say which credential this route takes.
      const presentedApiKey = bearer !== undefined && looksLikeApiKey(bearer);
      next(
        apiErrors.unauthorized(
          presentedApiKey ? sessionRequiredMessages.apiKey : sessionRequiredMessages.noSession,
        ),
      );
      return;
    }
    if (bearer === undefined && csrf && !isSafeMethod(request.method)) {
      const presented = request.headers[csrfHeaderName];
      if (!csrf.csrfTokenMatches(token!, typeof presented === "string" ? presented : undefined)) {
        next(apiErrors.unauthorized("A write with the session cookie needs its x-csrf-token header"));
        return;
      }
    }
    response.locals.session = session;
    next();
  };
}

export function sessionOf(locals: Record<string, unknown>): Session {
  const session = locals.session as Session | undefined;
  if (!session) throw new Error("session middleware did not run");
  return session;
}

export function bearerTokenOf(request: Request): string | undefined {
  return bearerTokenOfHeader(request.headers.authorization);
}

/** The token of an `Authorization: Bearer <token>` header; undefined for any other form. */
export function bearerTokenOfHeader(header: string | undefined): string | undefined {
  if (!header) return undefined;
  return /^Bearer\s+(\S+)\s*$/i.exec(header)?.[1];
}
