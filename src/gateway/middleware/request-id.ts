import { randomUUID } from "node:crypto";
import type { ServerResponse } from "node:http";
import type { RequestHandler } from "express";

/**
 * Every response carries `x-request-id`; the same id names the usage and the charge in the ledger, so it is
 * always minted here and never taken from the client (a replayed id would collide with a recorded usage).
 */
export function requestId(): RequestHandler {
  return (_request, response, next) => {
    response.locals.requestId = assignRequestId(response);
    next();
  };
}

/** Mints the request's id and puts it on the response's headers. */
export function assignRequestId(response: ServerResponse): string {
  const id = newRequestId();
  response.setHeader("x-request-id", id);
  return id;
}

export function newRequestId(): string {
  return `req_${randomUUID().replaceAll("-", "")}`;
}

export function requestIdOf(locals: Record<string, unknown>): string {
  const id = locals.requestId;
  if (typeof id !== "string") throw new Error("request id middleware did not run");
  return id;
}
