import type { IncomingMessage, RequestListener, ServerResponse } from "node:http";
import type { Logger } from "pino";
import { discountOrganizationOf } from "../../billing/charging/charge-usage";
import type { ModelPriceList } from "../../billing/read-models/model-price-list";
import type { AllowedModels } from "../../keys/allowed-models";
import type { AccountReference } from "../../ledger/events";
import { findModel } from "../../providers/catalog";
import { type ApiError, apiErrors } from "../api-error";
import { sendJsonText } from "../http/json-response";
import { readMeasuredJsonBody } from "../http/request-body";
import { sendError } from "../middleware/error-handler";
import { assignRequestId } from "../middleware/request-id";
import { pricedModels } from "../models/priced-model-list";
import { observationOf } from "../observation/request-observation";
import type { ApiKeyAdmission } from "./api-key-admission";
import type { ClientFormat } from "./client-format";
import { type GenerationDependencies, generationHandler } from "./generation-handler";

/**
 * /llm/v1 — the models list and the two generation endpoints, all behind an API key — served straight on
 * node:http rather than through express. This is the path every client request takes, and express's
 * per-request prototype swap of `req`/`res` made it cost more than the upstream call itself. The rest of
 * the API (keys, balance, admin) stays on express. Same request id, body rules and error body as there.
 */

const generationPathPrefix = "/llm/v1";
const modelPathPrefix = "/models/";

type Endpoint = (request: IncomingMessage, response: ServerResponse, requestId: string) => Promise<void>;

export function createGenerationEndpoints(
  dependencies: GenerationDependencies & { admission: ApiKeyAdmission; prices: ModelPriceList },
  formats: { chatCompletions: ClientFormat; responses: ClientFormat },
  options: { requestBodyBytesMax: number; logger: Logger },
): RequestListener {
  /**
   * GET /models/{id} (C11, `client.models.retrieve`): one model object; unknown → 404/120. A model the key
   * may not call (C14) is not in its list, so it is not found either, the message saying why.
   */
  const retrieveModel: Endpoint = async (request, response) => {
    const caller = await dependencies.admission.authenticate(request.headers.authorization, {
      requireCredit: false,
      fresh: true,
    });
    const id = decodedPathSegment(endpointPathOf(request.url ?? "").slice(modelPathPrefix.length));
    labelModelsRequest(response, caller, id);
    const models = await pricedModels(
      dependencies.prices,
      discountOrganizationOf(caller.account),
      caller.allowedModels,
    );
    const model = models.find((candidate) => candidate.id === id);
    if (model === undefined) throw modelNotFoundError(id, caller.allowedModels);
    sendJsonText(response, 200, JSON.stringify(model));
  };
  const generate = (format: ClientFormat): Endpoint => {
    const handle = generationHandler(format, dependencies);
    return async (request, response, requestId) => {
      // The key first: a missing or invalid one is 401/110 whatever the body (interface.md), and a client
      // without a key makes this process read, hold or parse no body at all.
      const caller = await dependencies.admission.authenticate(request.headers.authorization, {
        requireCredit: false,
      });
      const body = await readMeasuredJsonBody(request, options.requestBodyBytesMax);
      // Named before validation, so a refused request of a served model is counted under that model.
      const observation = observationOf(response);
      if (observation) observation.model = modelNamedBy(body.value);
      await handle({
        caller,
        callerNow: () =>
          dependencies.admission.authenticate(request.headers.authorization, {
            requireCredit: false,
            fresh: true,
          }),
        body: body.value,
        bodyBytes: body.bytes,
        requestId,
        response,
      });
    };
  };
  const endpoints = new Map<string, Endpoint>([
    [
      "GET /models",
      async (request, response) => {
        const caller = await dependencies.admission.authenticate(request.headers.authorization, {
          requireCredit: false,
          fresh: true,
        });
        labelModelsRequest(response, caller);
        const data = await pricedModels(
          dependencies.prices,
          discountOrganizationOf(caller.account),
          caller.allowedModels,
        );
        sendJsonText(response, 200, JSON.stringify({ object: "list", data }));
      },
    ],
    ["POST /chat/completions", generate(formats.chatCompletions)],
    ["POST /responses", generate(formats.responses)],
  ]);

  return (request, response) => {
    const requestId = assignRequestId(response);
    const method = methodOf(request);
    const path = endpointPathOf(request.url ?? "");
    const endpoint =
      endpoints.get(`${method} ${path}`) ??
      (method === "GET" && path.startsWith(modelPathPrefix) ? retrieveModel : undefined);
    const served = endpoint
      ? endpoint(request, response, requestId)
      : Promise.reject(unservedError(endpoints, request.method ?? "GET", path));
    served
      .catch((error: unknown) => sendError(response, error, { logger: options.logger, requestId }))
      .finally(() => observationOf(response)?.handlerEnded());
  };
}

/**
 * A path served with other methods (a GET on a generation endpoint, most often from a browser or a bare
 * curl) is 405 naming them; any other path is no route at all.
 */
function unservedError(endpoints: ReadonlyMap<string, Endpoint>, method: string, path: string): ApiError {
  const modelPath = path.startsWith(modelPathPrefix) && path.length > modelPathPrefix.length;
  const allowed = modelPath
    ? ["GET", "HEAD"]
    : [...endpoints.keys()]
        .filter((route) => route.endsWith(` ${path}`))
        .flatMap((route) => {
          const routeMethod = route.slice(0, route.indexOf(" "));
          return routeMethod === "GET" ? ["GET", "HEAD"] : [routeMethod];
        });
  if (allowed.length === 0) return apiErrors.notFound(notServedMessageOf(path));
  return apiErrors.methodNotAllowed(method, `${generationPathPrefix}${path}`, allowed);
}

const servedRoutes =
  "this gateway serves POST /llm/v1/chat/completions, POST /llm/v1/responses and GET /llm/v1/models";

/**
 * A path of the OpenAI-style API this gateway does not serve, said so with what it does serve: an SDK's
 * `responses.retrieve`, `chat.completions.retrieve` or `embeddings.create` gets a reason, not a bare 404.
 */
function notServedMessageOf(path: string): string {
  const shown = `${generationPathPrefix}${path.length > unservedPathShownMax ? `${path.slice(0, unservedPathShownMax)}…` : path}`;
  if (path.startsWith("/responses/"))
    return `No such route: ${shown}. This gateway keeps no responses, so none can be retrieved, listed, cancelled or deleted; ${servedRoutes}`;
  if (path.startsWith("/chat/completions/"))
    return `No such route: ${shown}. This gateway stores no chat completions, so none can be retrieved, listed, updated or deleted; ${servedRoutes}`;
  return `No such route: ${shown}; ${servedRoutes}`;
}

/** The client's path is its own text: enough of it to recognise, not a page of it echoed back. */
const unservedPathShownMax = 100;

/** A model outside the key's list reads as absent, as the list it gets does not show it (C14). */
function modelNotFoundError(id: string, allowedModels: AllowedModels): ApiError {
  if (allowedModels === null || findModel(id) === undefined) return apiErrors.unknownModel(id);
  return apiErrors.notFound(
    `The model '${id}' is not one this API key may call; GET /llm/v1/models lists the models it may call`,
  );
}

/** The `model` a body names, if it names one as text (validation judges the rest). */
function modelNamedBy(body: unknown): string | undefined {
  const model = (body as { model?: unknown } | null | undefined)?.model;
  return typeof model === "string" ? model : undefined;
}

/** Whether a request URL is under /llm/v1 (and so served here). */
export function isGenerationPath(url: string): boolean {
  if (!url.startsWith(generationPathPrefix)) return false;
  const next = url.charAt(generationPathPrefix.length);
  return next === "" || next === "/" || next === "?";
}

/** A percent-encoded path segment; one that is not valid UTF-8 once decoded is a bad request, as in express. */
function decodedPathSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw apiErrors.validation("id: the path is not valid percent-encoded UTF-8");
  }
}

/** HEAD is answered as GET (Node leaves the body out), as express does. */
function methodOf(request: IncomingMessage): string | undefined {
  return request.method === "HEAD" ? "GET" : request.method;
}

/** The path below /llm/v1 without its query or a trailing slash. */
function endpointPathOf(url: string): string {
  const queryStart = url.indexOf("?");
  const path = url.slice(generationPathPrefix.length, queryStart === -1 ? undefined : queryStart);
  return path.endsWith("/") ? path.slice(0, -1) : path;
}

/** A models request's metrics name its key's kind, and the model asked for (the list names none). */
function labelModelsRequest(
  response: ServerResponse,
  caller: { keyId: string; account: AccountReference },
  model?: string,
): void {
  const observation = observationOf(response);
  observation?.admitted(caller);
  if (observation && model !== undefined) observation.model = model;
}
