import { once } from "node:events";
import type { ServerResponse } from "node:http";
import type { Logger } from "pino";
import { observationOf, type RequestObservation } from "../../operations/request-observation";
import { type CatalogModel, findModel } from "../../providers/catalog";
import type { FinishReason, GenerationRequest, ReportedUsage } from "../../providers/provider";
import { apiErrors } from "../api-error";
import { sendJson } from "../http/json-response";
import { toApiError } from "../middleware/error-handler";
import type { EventStreamSink } from "../wire/event-stream-sink";
import type { ApiKeyAdmission, Caller } from "./api-key-admission";
import type { ClientFormat, ClientStream } from "./client-format";
import type { UpstreamRegistry } from "./upstream-registry";
import type { UsageRecorder } from "./usage-recorder";
import { resolveUsage } from "./usage-resolution";

/**
 * One generation request, JSON or streamed, in either client format: admit, validate, call the upstream,
 * record the usage, reply. Streams end in one of three ways, each recorded as the ledger needs it:
 * completed (the upstream's usage), client disconnected (abort upstream; what was produced is recorded),
 * upstream failed (an error event, then what was produced is recorded). Nothing produced, nothing recorded.
 */

export interface GenerationDependencies {
  admission: ApiKeyAdmission;
  upstreams: UpstreamRegistry;
  usage: UsageRecorder;
  logger: Logger;
  now?: () => Date;
}

interface GenerationContext {
  requestId: string;
  caller: Caller;
  model: CatalogModel;
  upstreamRequest: GenerationRequest;
  startedAt: Date;
  streamed: boolean;
  /** Timings and tokens for the access log and metrics (src/operations). */
  observation: RequestObservation | undefined;
}

type Outcome = "completed" | "client-disconnected" | "upstream-failed";

/** A request as the edge hands it over: its id minted, its body read (undefined when there was none). */
export interface GenerationExchange {
  authorization: string | undefined;
  body: unknown;
  requestId: string;
  response: ServerResponse;
}

/** Serves one exchange; a failure before any output is thrown for the edge to answer with the error body. */
export function generationHandler(
  format: ClientFormat,
  dependencies: GenerationDependencies,
): (exchange: GenerationExchange) => Promise<void> {
  const now = dependencies.now ?? (() => new Date());
  return async ({ authorization, body, requestId, response }) => {
    const startedAt = now();
    const observation = observationOf(response);
    const caller = await dependencies.admission.admit(authorization);
    if (observation) observation.accountKind = caller.account.kind;
    const parsed = format.parse(body);
    const slug = parsed.model;
    if (observation) observation.model = slug;
    const model = findModel(slug);
    if (!model) throw apiErrors.notFound(`The model '${slug}' does not exist`);
    const context: GenerationContext = {
      requestId,
      caller,
      model,
      upstreamRequest: format.toGenerationRequest(parsed, model),
      startedAt,
      streamed: parsed.stream,
      observation,
    };
    if (context.streamed) await streamGeneration(format, dependencies, context, response);
    else await jsonGeneration(format, dependencies, context, response);
  };
}

function abortOnDisconnect(response: ServerResponse): { signal: AbortSignal; clientGone: () => boolean } {
  const controller = new AbortController();
  let gone = false;
  response.on("close", () => {
    if (!response.writableFinished) {
      gone = true;
      controller.abort(new Error("client disconnected"));
    }
  });
  return { signal: controller.signal, clientGone: () => gone };
}

async function jsonGeneration(
  format: ClientFormat,
  dependencies: GenerationDependencies,
  context: GenerationContext,
  response: ServerResponse,
): Promise<void> {
  const { signal } = abortOnDisconnect(response);
  const observation = context.observation;
  observation?.upstreamStarted();
  const result = await dependencies.upstreams
    .adapterFor(context.model)
    .generate(context.upstreamRequest, signal)
    .finally(() => observation?.upstreamEnded());
  if (result.text !== "") observation?.firstToken();
  const usage = await recordUsage(dependencies, context, format, "completed", result.usage, result.text);
  if (!usage) throw apiErrors.ledgerUnavailable();
  sendJson(
    response,
    200,
    format.jsonBody({
      model: context.model.slug,
      createdAtMs: context.startedAt.getTime(),
      text: result.text,
      finishReason: result.finishReason,
      usage: usage.client,
    }),
  );
}

async function streamGeneration(
  format: ClientFormat,
  dependencies: GenerationDependencies,
  context: GenerationContext,
  response: ServerResponse,
): Promise<void> {
  const { signal, clientGone } = abortOnDisconnect(response);
  const sink = sseSink(response);
  let clientStream: ClientStream | undefined;
  // Headers wait for the first token, so a failure before any output is still a plain JSON error.
  const open = () => {
    clientStream ??= format.openStream(sink, {
      model: context.model.slug,
      createdAtMs: context.startedAt.getTime(),
    });
    return clientStream;
  };
  let produced = "";
  let reported: ReportedUsage | null = null;
  let finishReason: FinishReason = "stop";
  let failure: unknown;
  const observation = context.observation;
  observation?.upstreamStarted();
  try {
    for await (const parts of dependencies.upstreams
      .adapterFor(context.model)
      .stream(context.upstreamRequest, signal)) {
      for (const part of parts) {
        switch (part.type) {
          case "text-delta":
            observation?.firstToken();
            produced += part.text;
            open().delta(part.text);
            break;
          case "usage":
            reported = part.usage;
            break;
          case "finish":
            finishReason = part.finishReason;
            break;
          default: {
            const unreachable: never = part;
            throw new Error(`unknown stream part ${JSON.stringify(unreachable)}`);
          }
        }
      }
      if (response.writableNeedDrain) await drained(response, signal);
    }
  } catch (error) {
    failure = error;
  }
  observation?.upstreamEnded();

  const outcome: Outcome = clientGone() ? "client-disconnected" : failure ? "upstream-failed" : "completed";
  switch (outcome) {
    case "completed": {
      const usage = await recordUsage(dependencies, context, format, outcome, reported, produced);
      if (!usage) {
        if (!clientStream) throw apiErrors.ledgerUnavailable();
        clientStream.fail(apiErrors.ledgerUnavailable());
        return;
      }
      open().complete(finishReason, usage.client);
      return;
    }
    case "client-disconnected":
      if (produced !== "") await recordUsage(dependencies, context, format, outcome, reported, produced);
      return;
    case "upstream-failed": {
      if (!clientStream) throw failure;
      // Recorded before the stream closes, so the usage is in the ledger by the time the client sees the end.
      if (produced !== "") await recordUsage(dependencies, context, format, outcome, reported, produced);
      clientStream.fail(toApiError(failure));
      return;
    }
    default: {
      const unreachable: never = outcome;
      throw new Error(`unknown outcome ${unreachable}`);
    }
  }
}

/** Records the usage; undefined when the ledger could not take it (already logged with the full usage). */
async function recordUsage(
  dependencies: GenerationDependencies,
  context: GenerationContext,
  format: ClientFormat,
  outcome: Outcome,
  reported: ReportedUsage | null,
  producedText: string,
) {
  const usage = resolveUsage(reported, context.upstreamRequest.messages, producedText);
  const record = {
    requestId: context.requestId,
    keyId: context.caller.keyId,
    account: context.caller.account,
    userId: context.caller.userId,
    organizationId: context.caller.organizationId,
    model: context.model.slug,
    endpoint: format.endpoint,
    streamed: context.streamed,
    outcome,
    tokens: usage.tokens,
    usageSource: usage.source,
    startedAt: context.startedAt.toISOString(),
  };
  try {
    await dependencies.usage.record(record);
    const observation = context.observation;
    if (observation) observation.tokens = { input: usage.tokens.input, output: usage.tokens.output };
    return usage;
  } catch (error) {
    // The output may already be with the client: keep every detail so the usage can be recorded by hand.
    dependencies.logger.error({ err: error, unrecordedUsage: record }, "usage could not be recorded");
    return undefined;
  }
}

/**
 * Events written in the same tick (every delta of one upstream read) leave in one `write`, hence one chunk
 * of the chunked body and one socket write. They are joined here rather than corked in the response:
 * corking queues three buffers per write (size line, text, CRLF) and uncorking gathers them all, which
 * cost more than the deltas themselves. The flush runs on the next tick, so nothing waits for a timer.
 */
function sseSink(response: ServerResponse): EventStreamSink {
  let opened = false;
  let pending = "";
  const flush = () => {
    const text = pending;
    pending = "";
    // Ended meanwhile (the client went away and the request was wound up): there is no one to write to.
    if (text !== "" && !response.writableEnded) response.write(text);
  };
  return {
    write(chunk) {
      if (!opened) {
        opened = true;
        response.statusCode = 200;
        response.setHeader("content-type", "text/event-stream; charset=utf-8");
        response.setHeader("cache-control", "no-cache");
        response.setHeader("connection", "keep-alive");
        response.setHeader("x-accel-buffering", "no");
      }
      if (pending === "") process.nextTick(flush);
      pending += chunk;
    },
    end() {
      const text = pending;
      pending = "";
      response.end(text);
    },
  };
}

async function drained(response: ServerResponse, signal: AbortSignal): Promise<void> {
  try {
    await once(response, "drain", { signal });
  } catch {
    // Aborted: the client is gone; the loop ends on the upstream abort.
  }
}
