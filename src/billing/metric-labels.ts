import type { AccountKind } from "../ledger/events";

/**
 * Label values of every gateway metric come from small closed sets, so a scrape stays the same size however
 * many keys, users or requests there are. Anything outside a set is folded into one value ("other",
 * "unknown"); a key, user or request id is never a label.
 */

export const endpointLabels = [
  "chat.completions",
  "responses",
  "models",
  "account",
  "admin",
  "operations",
  "other",
] as const;
export type EndpointLabel = (typeof endpointLabels)[number];

export const keyKindLabels = ["personal", "organization", "none"] as const;
export type KeyKindLabel = (typeof keyKindLabels)[number];

/** The HTTP statuses the gateway answers with (C3, C13); any other is reported by its class ("2xx", …). */
const knownStatuses = new Set([200, 201, 400, 401, 403, 404, 429, 500, 503]);

/** Statuses reported as themselves, plus the class of any other and a request whose client left first. */
export function statusLabelOf(httpStatus: number, finished: boolean): string {
  if (!finished) return "disconnected";
  if (knownStatuses.has(httpStatus)) return String(httpStatus);
  return `${Math.min(Math.max(Math.floor(httpStatus / 100), 1), 5)}xx`;
}

export function keyKindLabelOf(accountKind: AccountKind | undefined): KeyKindLabel {
  switch (accountKind) {
    case undefined:
      return "none";
    case "user":
      return "personal";
    case "organization":
      return "organization";
    default: {
      const unreachable: never = accountKind;
      throw new Error(`unknown account kind ${String(unreachable)}`);
    }
  }
}

const generationPrefix = "/llm/v1/";

/** The endpoint a request path belongs to, from its path alone (no ids: `/llm/apis/<uuid>` is "account"). */
export function endpointLabelOf(url: string): EndpointLabel {
  const queryStart = url.indexOf("?");
  const path = queryStart === -1 ? url : url.slice(0, queryStart);
  if (path.startsWith(generationPrefix) || path === "/llm/v1") {
    const rest = path.slice(generationPrefix.length).replace(/\/$/, "");
    if (rest === "chat/completions") return "chat.completions";
    if (rest === "responses") return "responses";
    if (rest === "models" || rest.startsWith("models/")) return "models";
    return "other";
  }
  if (path.startsWith("/llm/")) return "account";
  if (path === "/admin" || path.startsWith("/admin/")) return "admin";
  if (/^\/(health\/(live|ready)|metrics|openapi\.json|docs)\/?$/.test(path)) return "operations";
  return "other";
}

/**
 * The model label: a slug the gateway serves, else "unknown" (a client can send any string as `model`),
 * or "none" for a request that names no model.
 */
export function modelLabelOf(model: string | undefined, isServed: (slug: string) => boolean): string {
  if (model === undefined) return "none";
  return isServed(model) ? model : "unknown";
}

/**
 * `gen_ai_operation_name` (OpenTelemetry GenAI): both generation endpoints are "chat" (the conventions'
 * name for chat completions and for OpenAI's responses API alike); every other request "none".
 */
export function operationNameLabelOf(endpoint: EndpointLabel): "chat" | "none" {
  return endpoint === "chat.completions" || endpoint === "responses" ? "chat" : "none";
}

/**
 * `gen_ai_provider_name`: the family (the catalog's few) of the model whose upstream answered, a fallback's
 * in place of the one requested, as OpenTelemetry's `gen_ai.provider.name` is the provider that served the
 * request; of the requested model when none answered; "unknown" for a model the gateway does not serve,
 * "none" for a request that names no model.
 */
export function providerLabelOf(
  model: { requested: string | undefined; answering: string | undefined },
  familyOf: (slug: string) => string | undefined,
): string {
  const served = model.answering ?? model.requested;
  if (served === undefined) return "none";
  return familyOf(served) ?? "unknown";
}

/**
 * `error_type` (OpenTelemetry's `error.type`): the error body's `error.type` (C3's few), or
 * `client_disconnected`; empty — which Prometheus reads as no label — for a request that did not fail.
 */
export const errorTypeLabels = [
  "",
  "invalid_request_error",
  "authentication_error",
  "not_found_error",
  "rate_limit_error",
  "spend_limit_error",
  "permission_error",
  "model_processing_error",
  "insufficient_credit_error",
  "client_disconnected",
  "other",
] as const;

export function errorTypeLabelOf(errorType: string | null): string {
  if (errorType === null) return "";
  return (errorTypeLabels as readonly string[]).includes(errorType) ? errorType : "other";
}
