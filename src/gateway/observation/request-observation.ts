import type { IncomingMessage, ServerResponse } from "node:http";
import { performance } from "node:perf_hooks";
import type { Logger } from "pino";
import {
  endpointLabelOf,
  errorTypeLabelOf,
  keyKindLabelOf,
  modelLabelOf,
  operationNameLabelOf,
  providerLabelOf,
  statusLabelOf,
} from "../../billing/metric-labels";
import { withoutCredentials } from "../../kernel/credential-text";
import { isStorableText } from "../../kernel/storable-text";
import { previewOf } from "../../keys/api-key-secret";
import type { AccountKind, AccountReference, UsageOutcome, UsageTokens } from "../../ledger/events";
import {
  clientClosedRequestStatus,
  type RequestLogEntry,
  requestOutcomeOf,
} from "../activity/request-log-entry";
import type { ApiError } from "../api-error";
import { generationMetrics } from "./generation-metrics";

/**
 * What the edge learns about one request while serving it, turned into one access-log line and the
 * request metrics when the response closes. The generation path fills in what only it knows (model, key
 * kind, upstream timings, tokens) through `observationOf(response)`; everything else is read off the
 * request and response here.
 */
export class RequestObservation {
  readonly startedAtMs = performance.now();
  /** The wall clock at arrival, for the activity log. */
  readonly startedAt = new Date();
  model: string | undefined;
  accountKind: AccountKind | undefined;
  /** The key and the account it pays from, once the key is recognised. */
  keyId: string | undefined;
  account: AccountReference | undefined;
  streamed: boolean | undefined;
  tokens: UsageTokens | undefined;
  /** The model that answered in the requested one's place (a fallback), the one its usage is recorded as. */
  answeredBy: string | undefined;
  /** The model whose upstream answered: the one requested, or a fallback; undefined while none has. */
  answeringModel: string | undefined;
  /** How the generation path settled the request, when it got that far. */
  generationOutcome: UsageOutcome | undefined;
  /** The error the request was answered with, if any (src/gateway/middleware/error-handler.ts). */
  error: ApiError | undefined;
  /** The reply's body id (`chatcmpl-…`, `resp-…`), once the generation path has chosen it. */
  responseId: string | undefined;
  private handlerEndedResolve: (() => void) | undefined;
  /**
   * Settles when the generation handler is done with the request: a stream the client left is settled (its
   * usage known) only after the response closed, once the upstream read notices the abort.
   */
  readonly handled = new Promise<void>((resolve) => {
    this.handlerEndedResolve = resolve;
  });

  /** The handler of the request returned or threw (src/gateway/generation/generation-endpoints.ts). */
  handlerEnded(): void {
    this.handlerEndedResolve?.();
  }
  private upstreamStartedAtMs: number | undefined;
  private upstreamEndedAtMs: number | undefined;
  private firstTokenAtMs: number | undefined;

  /** The API key was recognised: whose request this is. */
  admitted(caller: { keyId: string; account: AccountReference }): void {
    this.keyId = caller.keyId;
    this.account = caller.account;
    this.accountKind = caller.account.kind;
  }

  /**
   * The usage the ledger records for this request, how it ended, and the model it is recorded as when a
   * fallback answered in place of the one requested.
   */
  used(tokens: UsageTokens, outcome: UsageOutcome, answeredBy: string | undefined): void {
    this.tokens = tokens;
    this.generationOutcome = outcome;
    this.answeredBy = answeredBy;
  }

  /** The request ended with nothing produced (no usage to record): how. */
  endedWithout(outcome: UsageOutcome): void {
    this.generationOutcome = outcome;
  }

  /** An upstream answered the request (its reply, or a stream's first parts), for this model. */
  upstreamAnswered(model: string): void {
    this.answeringModel ??= model;
  }

  /** The request is handed to the upstream. */
  upstreamStarted(): void {
    this.upstreamStartedAtMs ??= performance.now();
  }

  /** The first output token arrived from the upstream (later calls are ignored). */
  firstToken(): void {
    this.firstTokenAtMs ??= performance.now();
  }

  /** The upstream's answer (or stream) is over. */
  upstreamEnded(): void {
    this.upstreamEndedAtMs ??= performance.now();
  }

  /** Milliseconds from the request's arrival to the first token, if one came. */
  timeToFirstTokenMs(): number | undefined {
    return this.firstTokenAtMs === undefined ? undefined : this.firstTokenAtMs - this.startedAtMs;
  }

  /** The request's time minus the time spent waiting for the upstream; undefined if it never got there. */
  overheadMs(endedAtMs: number): number | undefined {
    if (this.upstreamStartedAtMs === undefined) return undefined;
    const upstreamMs = (this.upstreamEndedAtMs ?? endedAtMs) - this.upstreamStartedAtMs;
    return Math.max(0, endedAtMs - this.startedAtMs - upstreamMs);
  }
}

const observations = new WeakMap<ServerResponse, RequestObservation>();

/** The observation of the request this response answers (undefined outside an observed edge). */
export function observationOf(response: ServerResponse): RequestObservation | undefined {
  return observations.get(response);
}

export interface RequestObserverOptions {
  logger: Logger;
  /** Whether a model slug is one the gateway serves (others are labelled "unknown"). */
  isServedModel: (slug: string) => boolean;
  /** The family of a served model (`gen_ai_provider_name`); undefined for any other slug. */
  familyOf?: (slug: string) => string | undefined;
  /** Takes each generation request whose key was recognised, for the activity log; must not block. */
  requestLog?: (entry: RequestLogEntry) => void;
}

/** Starts observing each request; call it first thing in the request listener. */
export function requestObserver(
  options: RequestObserverOptions,
): (request: IncomingMessage, response: ServerResponse) => void {
  // The access line's fields are a closed set built here (a key only as its C4 preview): redacting it by
  // path, as the process logger does, tripled the cost of each line (about 40 µs a request) and found nothing.
  const accessLogger = options.logger.child({}, { redact: { paths: [] } });
  const finishOptions = { ...options, logger: accessLogger };
  return (request, response) => {
    const observation = new RequestObservation();
    observations.set(response, observation);
    // Read now: express rewrites `request.url` below each router it mounts.
    const url = request.url ?? "";
    response.once("close", () => finish(finishOptions, request, url, response, observation));
  };
}

function finish(
  options: RequestObserverOptions,
  request: IncomingMessage,
  url: string,
  response: ServerResponse,
  observation: RequestObservation,
): void {
  const endedAtMs = performance.now();
  const totalMs = endedAtMs - observation.startedAtMs;
  const overheadMs = observation.overheadMs(endedAtMs);
  const timeToFirstTokenMs = observation.timeToFirstTokenMs();
  const endpoint = endpointLabelOf(url);
  const labels = {
    model: modelLabelOf(observation.model, options.isServedModel),
    responseModel: modelLabelOf(observation.answeringModel, options.isServedModel),
    operationName: operationNameLabelOf(endpoint),
    providerName: providerLabelOf(
      { requested: observation.model, answering: observation.answeringModel },
      options.familyOf ?? (() => undefined),
    ),
    endpoint,
    keyKind: keyKindLabelOf(observation.accountKind),
  };
  const status = statusLabelOf(response.statusCode, response.writableFinished);
  const { errorType } = requestOutcomeOf({
    finished: response.writableFinished,
    generationOutcome: observation.generationOutcome,
    error: observation.error,
  });
  generationMetrics.observeRequest({
    ...labels,
    status,
    errorType: errorTypeLabelOf(errorType),
    durationSeconds: totalMs / 1_000,
  });
  if (overheadMs !== undefined) {
    generationMetrics.observeGeneration({
      ...labels,
      timeToFirstTokenSeconds: timeToFirstTokenMs === undefined ? undefined : timeToFirstTokenMs / 1_000,
      afterFirstTokenSeconds:
        timeToFirstTokenMs === undefined ? undefined : (totalMs - timeToFirstTokenMs) / 1_000,
      overheadSeconds: overheadMs / 1_000,
      tokens: observation.tokens,
    });
  }
  const { requestLog } = options;
  if (requestLog && (labels.endpoint === "chat.completions" || labels.endpoint === "responses")) {
    const seen = {
      endpoint: labels.endpoint,
      keyPreview: keyPreviewOf(request.headers.authorization),
      finished: response.writableFinished,
      latencyMs: totalMs,
      timeToFirstTokenMs,
    };
    void observation.handled.then(() => {
      const entry = requestLogEntryOf(observation, response, seen);
      if (entry) requestLog(entry);
    });
  }
  options.logger.info(
    {
      requestId: response.getHeader("x-request-id"),
      method: request.method,
      path: withoutCredentials(pathOf(url)),
      status: response.statusCode,
      ...(response.writableFinished ? {} : { disconnected: true }),
      keyPreview: keyPreviewOf(request.headers.authorization),
      model: observation.model === undefined ? undefined : withoutCredentials(observation.model),
      // A fallback answered in the requested model's place: the model whose upstream served it.
      answeredBy: observation.answeringModel === observation.model ? undefined : observation.answeringModel,
      inputTokens: observation.tokens?.input,
      outputTokens: observation.tokens?.output,
      totalMs: roundMs(totalMs),
      overheadMs: overheadMs === undefined ? undefined : roundMs(overheadMs),
      timeToFirstTokenMs: timeToFirstTokenMs === undefined ? undefined : roundMs(timeToFirstTokenMs),
    },
    "request",
  );
}

/** The activity-log row of a generation request; undefined when its key was never recognised. */
function requestLogEntryOf(
  observation: RequestObservation,
  response: ServerResponse,
  seen: {
    endpoint: RequestLogEntry["endpoint"];
    keyPreview: string | undefined;
    finished: boolean;
    latencyMs: number;
    timeToFirstTokenMs: number | undefined;
  },
): RequestLogEntry | undefined {
  const requestId = response.getHeader("x-request-id");
  if (observation.keyId === undefined || observation.account === undefined || typeof requestId !== "string")
    return undefined;
  const { outcome, errorType } = requestOutcomeOf({
    finished: seen.finished,
    generationOutcome: observation.generationOutcome,
    error: observation.error,
  });
  return {
    requestId,
    startedAt: observation.startedAt,
    account: observation.account,
    keyId: observation.keyId,
    keyPreview: seen.keyPreview ?? null,
    model: storableModelOf(observation.model),
    answeredBy: observation.answeredBy ?? null,
    endpoint: seen.endpoint,
    streamed: observation.streamed ?? null,
    httpStatus: response.headersSent ? response.statusCode : clientClosedRequestStatus,
    outcome,
    latencyMs: roundMs(seen.latencyMs),
    timeToFirstTokenMs: seen.timeToFirstTokenMs === undefined ? null : roundMs(seen.timeToFirstTokenMs),
    tokens: observation.tokens ?? null,
    errorType,
    responseId: observation.responseId ?? null,
  };
}

/**
 * The model as the log keeps it: a client may send any text as `model`, refused or not; text PostgreSQL
 * cannot store would fail the whole batch, so it is kept only when storable, never longer than a slug, and
 * never with a credential a client pasted there (the organization's owners and admins read the log).
 */
const modelTextLengthMax = 200;

function storableModelOf(model: string | undefined): string | null {
  if (model === undefined || !isStorableText(model)) return null;
  return Array.from(withoutCredentials(model)).slice(0, modelTextLengthMax).join("");
}

/** The path without its query: a query may carry ids (and a key a client put there) a log need not keep. */
function pathOf(url: string): string {
  const queryStart = url.indexOf("?");
  return queryStart === -1 ? url : url.slice(0, queryStart);
}

const bearerApiKey = /^Bearer (svc_[A-Za-z0-9_-]{8,})$/;

/** The C4 preview of an API key given as bearer token; nothing for sessions, admin tokens or garbage. */
export function keyPreviewOf(authorization: string | undefined): string | undefined {
  const match = authorization === undefined ? null : bearerApiKey.exec(authorization);
  return match ? previewOf(match[1]!) : undefined;
}

function roundMs(value: number): number {
  return Math.round(value * 1_000) / 1_000;
}
