import type { Request, RequestHandler } from "express";
import type { Session, SessionTokens } from "../../sessions/session-tokens";
import { apiErrors } from "../api-error";

/** Key management and balance endpoints need a logged-in session: a bearer token or the `session` cookie. */
export function authenticateSession(tokens: SessionTokens): RequestHandler {
  return async (request, response, next) => {
    const token = bearerTokenOf(request) ?? sessionCookieOf(request);
    const session = token ? await tokens.verify(token) : undefined;
    if (!session) {
      next(apiErrors.unauthorized("A logged-in session is required"));
      return;
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

function sessionCookieOf(request: Request): string | undefined {
  const header = request.headers.cookie;
  if (!header) return undefined;
  for (const part of header.split(";")) {
    const [name, ...value] = part.trim().split("=");
    if (name === "session" && value.length > 0) return decodeURIComponent(value.join("="));
  }
  return undefined;
}
