import type { RequestHandler } from "express";
import { firstUnstorableTextPath, unstorableTextMessage } from "../../kernel/storable-text";
import { apiErrors } from "../api-error";

/**
 * Every express route (keys, account, admin, console) stores or looks up what its client sends, so no string
 * of a JSON body or a query may carry what PostgreSQL cannot store (src/database/storable-text.ts): refused
 * here once, 400/100 naming the field as zod errors do (`reference: …`, `tags.0.name: …`), rather than
 * failing as a 500 in whichever query meets it first. Path parameters are parsed by each route's own schema,
 * with the same check (`storableString`). The generation endpoints do not pass here: message text is sent
 * upstream, never stored, and may hold any character JSON can carry.
 */
export function refuseUnstorableText(): RequestHandler {
  return (request, _response, next) => {
    const undecodable = undecodableQueryParameter(request.url);
    if (undecodable !== undefined) {
      next(apiErrors.validation(`${undecodable}: is not valid percent-encoded UTF-8`));
      return;
    }
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

/**
 * The query parser decodes bytes that are not UTF-8 (a lone surrogate's only way in, as WTF-8) to U+FFFD,
 * so a lookup would silently ask for another id; such a parameter is refused, as express refuses it in a path.
 */
function undecodableQueryParameter(url: string): string | undefined {
  const queryStart = url.indexOf("?");
  if (queryStart === -1) return undefined;
  for (const parameter of url.slice(queryStart + 1).split("&")) {
    try {
      decodeURIComponent(parameter.replaceAll("+", " "));
    } catch {
      const name = parameter.split("=")[0] ?? "";
      try {
        return decodeURIComponent(name.replaceAll("+", " ")) || "query";
      } catch {
        return "query";
      }
    }
  }
  return undefined;
}
