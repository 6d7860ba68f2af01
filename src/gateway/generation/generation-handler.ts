import { once } from "node:events";
import type { ServerResponse } from "node:http";
import type { Logger } from "pino";
import { discountOrganizationOf } from "../../billing/charging/charge-usage";
import type { GenerationHolds, RequestHold, SettledUpstream } from "../../billing/holds/generation-holds";
import { observationOf, type RequestObservation } from "../../operations/request-observation";
import { type CatalogModel, findModel } from "../../providers/catalog";
import type { FinishReason, GenerationRequest, ReportedUsage, ToolCall } from "../../providers/provider";
import type { UpstreamCall } from "../../providers/resilience/upstream-call";
import { apiErrors } from "../api-error";
import { sendJson } from "../http/json-response";
import { toApiError } from "../middleware/error-handler";
import type { EventStreamSink } from "../wire/event-stream-sink";
import type { ApiKeyAdmission, Caller } from "./api-key-admission";
import type { ClientFormat, ClientStream } from "./client-format";
import { fallbackRequestOf } from "./fallback-request";
import { nextReplyMilliseconds } from "./reply-clock";
import type { UpstreamRegistry } from "./upstream-registry";
import { type ResolvedUsage, resolveUsage } from "./usage-resolution";

/**
 * One generation request, JSON or streamed, in either client format: admit, validate, hold funds (C10),
 * call the upstream, reply, then settle the hold. The hold is placed while the upstream call is on its way
 * (or before it, near the account's limit) and no byte reaches the client before it is durable; a refused
 * hold aborts the upstream call. Streams end in one of three ways, each settled as the ledger needs it:
 * completed (the upstream's usage), client disconnected (abort upstream; what was produced is posted),
 * upstream failed (an error event, then what was produced is posted). Nothing produced: the hold is voided.
 */

export interface GenerationDependencies {
  admission: ApiKeyAdmission;
  upstreams: UpstreamRegistry;
  holds: Pick<GenerationHolds, "begin">;
  logger: Logger;
  now?: () => Date;
}

interface GenerationContext {
  requestId: string;
  caller: Caller;
  model: CatalogModel;
  upstreamRequest: GenerationRequest;
  /** Attempts across endpoints and fallbacks until one answers (C13); it knows which model answered. */
  upstream: UpstreamCall;
  startedAt: Date;
  /** The reply's `<prefix>-<ms>` ids and `created`: the start, made unique within this process (C12). */
  replyMs: number;
  streamed: boolean;
  hold: RequestHold;
  /** Timings and tokens for the access log and metrics (src/operations). */
  observation: RequestObservation | undefined;
}

type Outcome = "completed" | "client-disconnected" | "upstream-failed";

/** A request as the edge hands it over: its id minted, its body read (undefined when there was none). */
export interface GenerationExchange {
  authorization: string | undefined;
  body: unknown;
  /** The body's size once inflated: the hold's bound on input tokens. */
  bodyBytes: number;
  requestId: string;
  response: ServerResponse;
}

/** Serves one exchange; a failure before any output is thrown for the edge to answer with the error body. */
export function generationHandler(
  format: ClientFormat,
  dependencies: GenerationDependencies,
): (exchange: GenerationExchange) => Promise<void> {
  const now = dependencies.now ?? (() => new Date());
  return async ({ authorization, body, bodyBytes, requestId, response }) => {
    const startedAt = now();
    const observation = observationOf(response);
    const caller = await dependencies.admission.authenticate(authorization, { requireCredit: false });
    if (observation) observation.accountKind = caller.account.kind;
    const parsed = format.parse(body);
    const slug = parsed.model;
    if (observation) observation.model = slug;
    const model = findModel(slug);
    if (!model) throw apiErrors.notFound(`The model '${slug}' does not exist`);
    const upstreamRequest = format.toGenerationRequest(parsed, model);
    const hold = dependencies.holds.begin({
      requestId,
      keyId: caller.keyId,
      account: caller.account,
      userId: caller.userId,
      organizationId: caller.organizationId,
      discountOrganizationId: discountOrganizationOf(caller.account),
      availableWon: caller.availableWon,
      model: model.slug,
      endpoint: format.endpoint,
      streamed: parsed.stream,
      startedAt,
      bodyBytes,
      maxOutputTokens: upstreamRequest.maxOutputTokens,
    });
    const context: GenerationContext = {
      requestId,
      caller,
      model,
      upstreamRequest,
      upstream: dependencies.upstreams.call(model, (candidate) =>
        candidate === model ? upstreamRequest : fallbackRequestOf(format, parsed, candidate),
      ),
      startedAt,
      replyMs: nextReplyMilliseconds(startedAt.getTime()),
      streamed: parsed.stream,
      hold,
      observation,
    };
    if (hold.holdFirst) await hold.placed;
    if (context.streamed) await streamGeneration(format, context, response);
    else await jsonGeneration(format, context, response);
  };
}

/** Aborts the upstream call when the client goes away, or when the hold is refused. */
function upstreamAbort(
  response: ServerResponse,
  hold: RequestHold,
): { signal: AbortSignal; clientGone: () => boolean } {
  const controller = new AbortController();
  let gone = false;
  response.on("close", () => {
    if (!response.writableFinished) {
      gone = true;
      controller.abort(new Error("client disconnected"));
    }
  });
  hold.placed.catch(() => controller.abort(new Error("hold refused")));
  return { signal: controller.signal, clientGone: () => gone };
}

async function jsonGeneration(
  format: ClientFormat,
  context: GenerationContext,
  response: ServerResponse,
): Promise<void> {
  const { signal, clientGone } = upstreamAbort(response, context.hold);
  const observation = context.observation;
  observation?.upstreamStarted();
  const generating = context.upstream.generate(signal).finally(() => observation?.upstreamEnded());
  // Answered below, after the hold: a refusal aborts the call, and its rejection is the hold's to report.
  generating.catch(() => {});
  await context.hold.placed;
  let result: Awaited<typeof generating>;
  try {
    result = await generating;
  } catch (error) {
    context.hold.void(clientGone() ? "client-disconnected" : "upstream-failed", settledUpstreamOf(context));
    throw error;
  }
  if (result.text !== "" || result.toolCalls.length > 0) observation?.firstToken();
  const usage = resolveUsage(result.usage, context.upstreamRequest, result);
  sendJson(
    response,
    200,
    format.jsonBody({
      model: context.upstream.answeringModel.slug,
      createdAtMs: context.replyMs,
      text: result.text,
      toolCalls: result.toolCalls,
      finishReason: result.finishReason,
      usage: usage.client,
    }),
  );
  postUsage(context, "completed", usage);
}

async function streamGeneration(
  format: ClientFormat,
  context: GenerationContext,
  response: ServerResponse,
): Promise<void> {
  const { signal, clientGone } = upstreamAbort(response, context.hold);
  const sink = sseSink(response);
  let clientStream: ClientStream | undefined;
  // Headers wait for the first token, so a failure before any output is still a plain JSON error.
  const open = () => {
    clientStream ??= format.openStream(sink, {
      model: context.upstream.answeringModel.slug,
      createdAtMs: context.replyMs,
    });
    return clientStream;
  };
  const produced = { text: "", toolCalls: [] as ToolCall[] };
  let reported: ReportedUsage | null = null;
  let finishReason: FinishReason = "stop";
  let failure: unknown;
  let holdPlaced = false;
  const observation = context.observation;
  observation?.upstreamStarted();
  try {
    for await (const parts of context.upstream.stream(signal)) {
      // No byte reaches the client before the hold is durable.
      if (!holdPlaced) {
        await context.hold.placed;
        holdPlaced = true;
      }
      for (const part of parts) {
        switch (part.type) {
          case "text-delta":
            observation?.firstToken();
            produced.text += part.text;
            open().delta(part.text);
            break;
          case "tool-call-start":
            observation?.firstToken();
            produced.toolCalls[part.index] = { id: part.id, name: part.name, arguments: "" };
            open().toolCallStart(part.index, part.id, part.name);
            break;
          case "tool-call-delta": {
            const call = produced.toolCalls[part.index];
            if (!call) throw new Error(`arguments for tool call ${part.index}, which never started`);
            call.arguments += part.argumentsDelta;
            open().toolCallDelta(part.index, part.argumentsDelta);
            break;
          }
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
  // A refused or failed hold is the answer, whatever the upstream did meanwhile (it was aborted).
  await context.hold.placed;

  const outcome: Outcome = clientGone() ? "client-disconnected" : failure ? "upstream-failed" : "completed";
  switch (outcome) {
    case "completed": {
      const usage = resolveUsage(reported, context.upstreamRequest, produced);
      open().complete(finishReason, usage.client);
      postUsage(context, outcome, usage);
      return;
    }
    case "client-disconnected":
      if (nothingProduced(produced)) context.hold.void(outcome, settledUpstreamOf(context));
      else postUsage(context, outcome, resolveUsage(reported, context.upstreamRequest, produced));
      return;
    case "upstream-failed": {
      if (nothingProduced(produced)) context.hold.void(outcome, settledUpstreamOf(context));
      else postUsage(context, outcome, resolveUsage(reported, context.upstreamRequest, produced));
      if (!clientStream) throw failure;
      clientStream.fail(toApiError(failure));
      return;
    }
    default: {
      const unreachable: never = outcome;
      throw new Error(`unknown outcome ${unreachable}`);
    }
  }
}

/** The attempts for the settlement, and the answering model when a fallback answered (it is billed). */
function settledUpstreamOf(context: GenerationContext): SettledUpstream {
  const answering = context.upstream.answeringModel.slug;
  return {
    attempts: context.upstream.attempts,
    ...(answering === context.model.slug ? {} : { answeringModel: answering }),
  };
}

function nothingProduced(produced: { text: string; toolCalls: readonly ToolCall[] }): boolean {
  return produced.text === "" && produced.toolCalls.length === 0;
}

/** The usage replaces the hold; written after the answer (the hold is the durable witness meanwhile). */
function postUsage(context: GenerationContext, outcome: Outcome, usage: ResolvedUsage): void {
  context.hold.post({
    tokens: usage.tokens,
    usageSource: usage.source,
    outcome,
    upstream: settledUpstreamOf(context),
  });
  if (context.observation)
    context.observation.tokens = { input: usage.tokens.input, output: usage.tokens.output };
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
