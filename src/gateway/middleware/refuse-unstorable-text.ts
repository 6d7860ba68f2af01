import type { RequestHandler } from "express";
import { firstUnstorableTextPath, unstorableTextMessage } from "../../database/storable-text";
import { apiErrors } from "../api-error";

/**
 * Every express route (keys, account, admin, console) stores or looks up what its client sends, so no string
 * of a JSON body or a query may carry what PostgreSQL cannot store (src/database/storable-text.ts): refused
 * here once, 400/100 naming the field as zod errors do (`reference: …`, `messages.0.content: …`), rather
 * than failing as a 500 in whichever query meets it first. Path parameters are parsed by each route's own
 * schema, with the same check (see `storableText`). The generation endpoints do not pass here: message
 * text is sent upstream, never stored, and may hold any character JSON can carry.
 */
export function refuseUnstorableText(): RequestHandler {
  return (request, _response, next) => {
    const field = fieldOf(request.query) ?? fieldOf(request.body, "body");
    next(field === undefined ? undefined : apiErrors.validation(`${field}: ${unstorableTextMessage}`));
  };
}

/** Enough of a path to find the field, however deep the value. */
const namedSegmentsMax = 20;

function fieldOf(value: unknown, whole?: string): string | undefined {
  const path = firstUnstorableTextPath(value);
  if (path === undefined) return undefined;
  if (path.length === 0) return whole ?? "query";
  const named = path.slice(0, namedSegmentsMax).map(String).join(".");
  return path.length > namedSegmentsMax ? `${named}…` : named;
}
