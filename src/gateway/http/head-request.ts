import type { Response } from "express";

/**
 * Express answers a HEAD with the GET route, and Node leaves the body out. A route that streams its body
 * (an export of a month, a statement's charge lines) asks this once its status and headers are set: for a
 * HEAD it ends the response there, so the rows are never read only to be thrown away.
 */
export function endedAsHead(response: Response): boolean {
  if (response.req.method !== "HEAD") return false;
  response.end();
  return true;
}
