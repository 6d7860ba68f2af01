import type { RequestHandler } from "express";

/**
 * `Cache-Control: no-store` on every answer of the APIs it is mounted before: an answer there may hold a
 * secret shown once (an API key, a webhook's signing secret, a session token, a CSRF token) or an account's
 * money, which no cache between the client and the gateway (a proxy, the browser's disk, its back button)
 * may keep. A route may still say otherwise (an export) by setting its own.
 */
export function storedNowhere(): RequestHandler {
  return (_request, response, next) => {
    response.setHeader("cache-control", "no-store");
    next();
  };
}
