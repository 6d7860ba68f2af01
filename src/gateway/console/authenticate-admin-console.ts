import type { RequestHandler } from "express";
import { apiErrors } from "../api-error";
import { adminCookieName, type ConsoleAuth, cookieOf, csrfHeaderName, isSafeMethod } from "./console-auth";

/**
 * The admin API for the console: `Authorization: Bearer $ADMIN_TOKEN` as before (checked by `bearer`), or the
 * httpOnly `admin_session` cookie the console exchanged the token for, with the cookie's CSRF token on every
 * write. Console writes are recorded with actor `admin:console`.
 */
export function authenticateAdminOrConsole(bearer: RequestHandler, consoleAuth: ConsoleAuth): RequestHandler {
  return async (request, response, next) => {
    if (request.headers.authorization !== undefined) {
      bearer(request, response, next);
      return;
    }
    const cookie = cookieOf(request.headers.cookie, adminCookieName);
    if (cookie === undefined || !(await consoleAuth.adminCookieIsValid(cookie))) {
      next(apiErrors.unauthorized("Admin token required"));
      return;
    }
    if (!isSafeMethod(request.method)) {
      const presented = request.headers[csrfHeaderName];
      if (!consoleAuth.csrfTokenMatches(cookie, typeof presented === "string" ? presented : undefined)) {
        next(apiErrors.unauthorized("A write with the admin cookie needs its x-csrf-token header"));
        return;
      }
    }
    response.locals.actor = "admin:console";
    next();
  };
}
