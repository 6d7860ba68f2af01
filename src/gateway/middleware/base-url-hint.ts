import type { RequestHandler } from "express";
import { apiErrors } from "../api-error";
import { hasBody, refuseNonJsonBody } from "../http/request-body";
import { publicOriginOf } from "./public-origin";

/**
 * Requests that missed the API because of a wrong base URL get a 404 saying which one to use: an
 * OpenAI-style client configured with `…/v1` or the bare host calls `/v1/chat/completions` or
 * `/chat/completions`, and one configured with `…/llm` calls `/llm/chat/completions` — which would otherwise
 * meet the session routes' 401; so would one configured with `…/LLM/v1` (Express matches the session routes
 * in any case).
 */

const generationTails = ["chat/completions", "responses", "completions", "embeddings", "models"];
const wrongBaseUrl = new RegExp(
  `^/(?:v1/.*|v1|(?:llm/)?(?:${generationTails.map((tail) => tail.replace("/", "\\/")).join("|")})(?:/.*)?)$`,
);
/** The base URL spelt in another case (`/LLM/v1`, `/llm/V1`): paths are case-sensitive, as OpenAI's are. */
const baseUrlInAnotherCase = /^\/llm\/v1(?:\/|$)/i;
/** `/llm/models` is the console's session route: only an API key there is a wrong base URL. */
const sessionRouteShadowed = /^\/llm\/models(?:\/.*)?$/;

export function baseUrlHint(): RequestHandler {
  return (request, _response, next) => {
    const path = request.path;
    const otherCase = baseUrlInAnotherCase.test(path) && !path.startsWith("/llm/v1");
    if (!otherCase && !wrongBaseUrl.test(path)) {
      next();
      return;
    }
    if (
      !otherCase &&
      sessionRouteShadowed.test(path) &&
      !/^Bearer\s+svc_/i.test(request.headers.authorization ?? "")
    ) {
      next();
      return;
    }
    const origin = publicOriginOf(request);
    next(
      apiErrors.notFound(
        `No such route: ${path}. The API's base URL is ${origin}/llm/v1 (for example POST ${origin}/llm/v1/chat/completions)`,
      ),
    );
  };
}

/** Express routes refuse a body that is not JSON the same way the generation endpoints do. */
export function refuseNonJsonBodies(): RequestHandler {
  return (request, _response, next) => {
    try {
      if (hasBody(request)) refuseNonJsonBody(request);
      next();
    } catch (error) {
      next(error);
    }
  };
}
