import { createHash, timingSafeEqual } from "node:crypto";
import type { RequestHandler } from "express";
import { apiErrors } from "../api-error";
import { bearerTokenOf } from "./authenticate-session";

/** The admin API (C6): `Authorization: Bearer $ADMIN_TOKEN`, compared in constant time. */
export function authenticateAdmin(adminToken: string): RequestHandler {
  const expected = digest(adminToken);
  return (request, response, next) => {
    const presented = bearerTokenOf(request);
    if (!presented || !timingSafeEqual(digest(presented), expected)) {
      next(apiErrors.unauthorized("Admin token required"));
      return;
    }
    response.locals.actor = "admin";
    next();
  };
}

function digest(text: string): Buffer {
  return createHash("sha256").update(text).digest();
}

/** Whether a presented token is the admin token, compared in constant time (to tell a mistake apart). */
export function adminTokenMatcher(adminToken: string): (presented: string) => boolean {
  const expected = digest(adminToken);
  return (presented) => timingSafeEqual(digest(presented), expected);
}
