import { once } from "node:events";
import type { ServerResponse } from "node:http";
import type { Logger } from "pino";
import { billingMetrics } from "../../billing/billing-metrics";
import { discountOrganizationOf } from "../../billing/charging/charge-usage";
import type { GenerationHolds, RequestHold, SettledUpstream } from "../../billing/holds/generation-holds";
import type { SettlementTimings } from "../../billing/holds/settlement-timings";
import { mayCallModel } from "../../keys/allowed-models";
import type { voidReasons } from "../../ledger/events";
import { type CatalogModel, findModel } from "../../providers/catalog";
import { upstreamRequestsOfThisTurnWritten } from "../../providers/http/upstream-http-client";
import type {
  FinishReason,
  GenerationRequest,
  GenerationStreamPart,
  ReportedUsage,
  ToolCall,
} from "../../providers/provider";
import type { UpstreamCall } from "../../providers/resilience/upstream-call";
import { reportedInputOf } from "../../providers/stream-conversion";

import { type ApiError, apiErrors } from "../api-error";
import { sendJson } from "../http/json-response";
import { toApiError } from "../middleware/error-handler";
import { observationOf, type RequestObservation } from "../observation/request-observation";
import { chatCompletionIdOf } from "../wire/chat-completion-body";
import type { EventStreamSink } from "../wire/event-stream-sink";
import { responseIdsOf } from "../wire/response-body";
import type { ApiKeyAdmission, Caller } from "./api-key-admission";
import type { ClientFormat, ClientStream } from "./client-format";

import { fallbackRequestOf } from "./fallback-request";

import { OutputProgress } from "./output-progress";

import { nextReplyMilliseconds } from "./reply-clock";
import { GatewayCut, type GatewayCutReason, type RequestsInFlight } from "./requests-in-flight";
import type { UpstreamRegistry } from "./upstream-registry";
import { type ResolvedUsage, resolveUsage } from "./usage-resolution";

/**
 * One generation request, JSON or streamed, in either client format: admit, validate, hold funds (C10),
 * call the upstream, reply, then settle the hold. The hold is placed while the upstream call is on its way
 * (or before it, near the account's limit) and no byte reaches the client before it is durable; a refused
 * hold aborts the upstream call. A complete answer's last bytes — the JSON body, or a stream's usage chunk
 * and closing events — leave only once its usage is durable, so a crash can cut only answers that were not
 * complete. While it runs, the request's hold is renewed and a stream's output so far recorded with the
 * process's other requests (hold-progress.ts), so a crash bills what was delivered.
 *
 * Streams end in one of these ways, each settled as the ledger needs it: completed (the upstream's usage),
 * client disconnected (abort upstream; what was produced is posted), upstream failed (an error event, then
 * what was produced is posted), cut by the gateway at its drain bound or its stream deadline (an error
 * event; what was produced is posted with outcome `shutdown` or `deadline-exceeded`). Nothing produced:
 * the hold is voided.
 */

export interface GenerationDependencies {
  admission: ApiKeyAdmission;
  upstreams: UpstreamRegistry;
  holds: Pick<GenerationHolds, "begin">;
  inFlight: RequestsInFlight;
  timings: Pick<SettlementTimings, "streamDeadlineMs" | "usageDurableWaitMs">;
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

type Outcome = "completed" | "client-disconnected" | "upstream-failed" | GatewayCutReason;

/** A request as the edge hands it over: its id minted, its body read (undefined when there was none). */
export interface GenerationExchange {
  /** Authenticated before the body was read: a request without a valid key costs no body read. */
  caller: Caller;
  /** The key as the projections hold it now, not as this process's copy last read it (C4). */
  callerNow: () => Promise<Caller>;
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
  return async ({ caller: cachedCaller, callerNow, body, bodyBytes, requestId, response }) => {
    let caller = cachedCaller;
    const startedAt = now();
    const observation = observationOf(response);
    observation?.admitted(caller);
    const parsed = format.parse(body);
    const slug = parsed.model;
    if (observation) {
      observation.model = slug;
      observation.streamed = parsed.stream;
    }
    const model = findModel(slug);
    if (!model) throw apiErrors.unknownModel(slug);
    // Before the hold: a model the key may not call costs nothing and reaches no upstream (C14). This
    // process's copy may predate a change made through another gateway that allows it: the key as it is
    // now decides (a read only for a refusal; the hold refuses what the copy allowed and no longer may).
    if (!mayCallModel(caller.allowedModels, model)) {
      caller = await callerNow();
      if (!mayCallModel(caller.allowedModels, model)) throw apiErrors.modelNotAllowed(slug);
    }
    const upstreamRequest = format.toGenerationRequest(parsed, model);
    // A fallback the key may not call is skipped, as one that cannot take the request is; those left may
    // answer, and the hold is priced as the dearest of them.
    const fallbackRequests = new Map<CatalogModel, GenerationRequest>();
    for (const slug of model.fallbacks ?? []) {
      const fallback = findModel(slug);
      if (!fallback || !mayCallModel(caller.allowedModels, fallback)) continue;
      const fallbackRequest = fallbackRequestOf(format, parsed, fallback);
      if (fallbackRequest) fallbackRequests.set(fallback, fallbackRequest);
    }
    // The upstream call below is made in this turn; a hold that need not come first waits until it has
    // left, so the upstream works while the hold is priced and its statement runs. On a box whose cores
    // the database shares, a statement sent first could take the gateway's core before the request left.
    const hold = dependencies.holds.begin(
      {
        requestId,
        keyId: caller.keyId,
        account: caller.account,
        userId: caller.userId,
        organizationId: caller.organizationId,
        discountOrganizationId: discountOrganizationOf(caller.account),
        availableWon: caller.availableWon,
        keyHasLimits: caller.hasSpendOrRateLimit,
        model: model.slug,
        fallbackModels: [...fallbackRequests.keys()].map((fallback) => fallback.slug),
        endpoint: format.endpoint,
        streamed: parsed.stream,
        startedAt,
        bodyBytes,
        maxOutputTokens: upstreamRequest.maxOutputTokens,
      },
      upstreamRequestsOfThisTurnWritten,
    );
    const replyMs = nextReplyMilliseconds(startedAt.getTime());
    // The id the reply's body carries: what an SDK shows, so the activity log keeps it too.
    if (observation) observation.responseId = responseIdOf(format.endpoint, replyMs);
    const context: GenerationContext = {
      requestId,
      caller,
      model,
      upstreamRequest,
      upstream: dependencies.upstreams.call(model, (candidate) =>
        candidate === model ? upstreamRequest : (fallbackRequests.get(candidate) ?? null),
      ),
      startedAt,
      replyMs,
      streamed: parsed.stream,
      hold,
      observation,
    };
    if (hold.holdFirst) await hold.placed;
    if (context.streamed) await streamGeneration(format, dependencies, context, response);
    else await jsonGeneration(format, dependencies, context, response);
  };
}

/**
 * Aborts the upstream call when the client goes away, when the hold is refused, or when the gateway cuts
 * the request (drain bound, stream deadline). Registered in flight until `release`.
 */
function upstreamAbort(
  response: ServerResponse,
  hold: RequestHold,
  inFlight: RequestsInFlight,
): {
  signal: AbortSignal;
  clientGone: () => boolean;
  cut: () => GatewayCut | undefined;
  cutNow: (gatewayCut: GatewayCut) => void;
  release: () => void;
} {
  const controller = new AbortController();
  let gone = false;
  let cut: GatewayCut | undefined;
  response.on("close", () => {
    if (!response.writableFinished) {
      gone = true;
      controller.abort(new Error("client disconnected"));
    }
  });
  hold.placed.catch(() => controller.abort(new Error("hold refused")));
  const cutNow = (gatewayCut: GatewayCut) => {
    if (controller.signal.aborted) return;
    cut = gatewayCut;
    controller.abort(gatewayCut);
  };
  return {
    signal: controller.signal,
    clientGone: () => gone,
    cut: () => cut,
    cutNow,
    release: inFlight.register(cutNow),
  };
}

/** A complete answer's last bytes wait for its usage to be durable, within a bound (settlement-timings.ts). */
async function untilDurable(
  recorded: Promise<void>,
  context: GenerationContext,
  dependencies: GenerationDependencies,
): Promise<void> {
  const waitMs = dependencies.timings.usageDurableWaitMs;
  let timer: NodeJS.Timeout | undefined;
  const durable = await Promise.race([
    recorded.then(() => true),
    new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), waitMs);
    }),
  ]);
  clearTimeout(timer);
  if (!durable) {
    billingMetrics.observeAnswerBeforeDurableUsage();
    dependencies.logger.warn(
      { requestId: context.requestId, waitMs },
      "the usage was not durable in time; the answer leaves anyway (its hold witnesses it)",
    );
  }
}

async function jsonGeneration(
  format: ClientFormat,
  dependencies: GenerationDependencies,
  context: GenerationContext,
  response: ServerResponse,
): Promise<void> {
  const { signal, clientGone, cut, cutNow, release } = upstreamAbort(
    response,
    context.hold,
    dependencies.inFlight,
  );
  try {
    const observation = context.observation;
    observation?.upstreamStarted();
    const generating = context.upstream.generate(signal).finally(() => observation?.upstreamEnded());
    // Answered below, after the hold: a refusal aborts the call, and its rejection is the hold's to report.
    generating.catch(() => {});
    await context.hold.placed;
    // Nothing is delivered before the whole answer: the progress record only renews the hold.
    context.hold.trackProgress(
      () => ({ outputTokens: 0, reportedInput: null, answeringModel: fallbackAnsweringOf(context) }),
      () => cutNow(new GatewayCut("interrupted")),
    );
    let result: Awaited<typeof generating>;
    try {
      result = await generating;
      observation?.upstreamAnswered(context.upstream.answeringModel.slug);
    } catch (error) {
      const gatewayCut = cut();
      voidHold(
        context,
        gatewayCut ? gatewayCut.reason : clientGone() ? "client-disconnected" : "upstream-failed",
      );
      if (gatewayCut) throw cutErrorOf(gatewayCut.reason, dependencies);
      throw error;
    }
    // The answer leaves only on a hold still standing: a released one covers nothing more (C10).
    const held = stillHeld(context.hold, signal);
    if (held !== true && !(await held)) {
      const gatewayCut = cut();
      voidHold(context, gatewayCut ? gatewayCut.reason : "client-disconnected");
      if (gatewayCut) throw cutErrorOf(gatewayCut.reason, dependencies);
      return; // The client left while the answer waited: there is no one to answer.
    }
    // Gone before its answer: nothing was delivered, so nothing is billed (C10).
    if (clientGone()) {
      voidHold(context, "client-disconnected");
      return;
    }
    if (!nothingProduced(result)) observation?.firstToken();
    const usage = resolveUsage(result.usage, context.upstreamRequest, result);
    await untilDurable(postUsage(context, "completed", usage), context, dependencies);
    sendJson(
      response,
      200,
      format.jsonBody({
        model: context.upstream.answeringModel.slug,
        createdAtMs: context.replyMs,
        text: result.text,
        ...(result.refusal === undefined ? {} : { refusal: result.refusal }),
        toolCalls: result.toolCalls,
        finishReason: result.finishReason,
        usage: usage.client,
      }),
    );
  } finally {
    release();
  }
}

async function streamGeneration(
  format: ClientFormat,
  dependencies: GenerationDependencies,
  context: GenerationContext,
  response: ServerResponse,
): Promise<void> {
  const { signal, clientGone, cut, cutNow, release } = upstreamAbort(
    response,
    context.hold,
    dependencies.inFlight,
  );
  const deadline = setTimeout(
    () => cutNow(new GatewayCut("deadline-exceeded")),
    Math.max(0, context.startedAt.getTime() + dependencies.timings.streamDeadlineMs - Date.now()),
  );
  try {
    await streamUntilSettled(format, dependencies, context, response, { signal, clientGone, cut, cutNow });
  } finally {
    clearTimeout(deadline);
    release();
  }
}

/** What a generation produced: its text, its refusal (where the protocol says one apart) and its calls. */
type Produced = { text: string; refusal?: string | undefined; toolCalls: readonly ToolCall[] };

/** What relaying a stream left to settle: what was produced and reported, and how the relay ended. */
interface Relayed {
  produced: Produced & { toolCalls: ToolCall[] };
  /**
   * What the upstream reported: its final usage, or until it arrives the input counts of the stream's start
   * (the output not reported: a stream cut now is billed the upstream's input and our count of the output).
   */
  reported: ReportedUsage | null;
  finishReason: FinishReason;
  failure: unknown;
  /** The client's stream, opened on the first token (undefined: nothing was sent, not even headers). */
  clientStream: ClientStream | undefined;
  open: () => ClientStream;
}

async function streamUntilSettled(
  format: ClientFormat,
  dependencies: GenerationDependencies,
  context: GenerationContext,
  response: ServerResponse,
  control: {
    signal: AbortSignal;
    clientGone: () => boolean;
    cut: () => GatewayCut | undefined;
    cutNow: (gatewayCut: GatewayCut) => void;
  },
): Promise<void> {
  const relayed = await relayStream(format, context, response, control.signal, () =>
    control.cutNow(new GatewayCut("interrupted")),
  );
  // A refused or failed hold is the answer, whatever the upstream did meanwhile (it was aborted).
  await context.hold.placed;
  const gatewayCut = control.cut();
  const outcome: Outcome = gatewayCut
    ? gatewayCut.reason
    : control.clientGone()
      ? "client-disconnected"
      : relayed.failure
        ? "upstream-failed"
        : "completed";
  await settleStream(outcome, relayed, dependencies, context, response);
}

/**
 * Relays the upstream's stream to the client, once the hold is placed, until it ends or fails; each batch
 * only while the hold stands (`onReleased` cuts the request once it is found released).
 */
async function relayStream(
  format: ClientFormat,
  context: GenerationContext,
  response: ServerResponse,
  signal: AbortSignal,
  onReleased: () => void,
): Promise<Relayed> {
  const sink = sseSink(response);
  const relayed: Relayed = {
    produced: { text: "", refusal: "", toolCalls: [] },
    reported: null,
    finishReason: "stop",
    failure: undefined,
    clientStream: undefined,
    // Headers wait for the first token, so a failure before any output is still a plain JSON error.
    open: () => {
      relayed.clientStream ??= format.openStream(sink, {
        model: context.upstream.answeringModel.slug,
        createdAtMs: context.replyMs,
      });
      return relayed.clientStream;
    },
  };
  const progress = new OutputProgress();
  // Tracked from its placement, not its first token: a slow first token must not look freshly confirmed.
  // The input the upstream reported so far and the fallback answering are recorded with the output: what
  // the orphan sweep bills, and as which model, as a cut here would, should this process die before it
  // settles the request.
  context.hold.placed.then(
    () =>
      context.hold.trackProgress(
        () => ({
          outputTokens: progress.outputTokens,
          reportedInput: reportedInputOf(relayed.reported),
          answeringModel: fallbackAnsweringOf(context),
        }),
        onReleased,
      ),
    () => {},
  );
  let holdPlaced = false;
  context.observation?.upstreamStarted();
  try {
    for await (const parts of context.upstream.stream(signal)) {
      // No byte reaches the client before the hold is durable.
      if (!holdPlaced) {
        context.observation?.upstreamAnswered(context.upstream.answeringModel.slug);
        await context.hold.placed;
        holdPlaced = true;
      }
      const held = stillHeld(context.hold, signal);
      if (held !== true && !(await held)) {
        onReleased();
        break;
      }
      for (const part of parts) relayPart(part, relayed, progress, context.observation);
      if (response.writableNeedDrain) await drained(response, signal);
    }
  } catch (error) {
    relayed.failure = error;
  }
  context.observation?.upstreamEnded();
  return relayed;
}

function relayPart(
  part: GenerationStreamPart,
  relayed: Relayed,
  progress: OutputProgress,
  observation: RequestObservation | undefined,
): void {
  const { produced } = relayed;
  switch (part.type) {
    case "text-delta":
      observation?.firstToken();
      produced.text += part.text;
      progress.delivered(part.text);
      relayed.open().delta(part.text);
      return;
    case "refusal-delta":
      observation?.firstToken();
      produced.refusal += part.text;
      progress.delivered(part.text);
      relayed.open().refusalDelta(part.text);
      return;
    case "tool-call-start":
      observation?.firstToken();
      produced.toolCalls[part.index] = { id: part.id, name: part.name, arguments: "" };
      progress.delivered(part.name);
      relayed.open().toolCallStart(part.index, part.id, part.name);
      return;
    case "tool-call-delta": {
      const call = produced.toolCalls[part.index];
      if (!call) throw new Error(`arguments for tool call ${part.index}, which never started`);
      call.arguments += part.argumentsDelta;
      progress.delivered(part.argumentsDelta);
      relayed.open().toolCallDelta(part.index, part.argumentsDelta);
      return;
    }
    case "input-usage":
      relayed.reported = { ...part.usage, outputTokens: null, reasoningTokens: null };
      return;
    case "usage":
      relayed.reported = part.usage;
      return;
    case "finish":
      relayed.finishReason = part.finishReason;
      return;
    default: {
      const unreachable: never = part;
      throw new Error(`unknown stream part ${JSON.stringify(unreachable)}`);
    }
  }
}

/** Settles the hold as the outcome needs, and ends the client's stream as its format says. */
async function settleStream(
  outcome: Outcome,
  relayed: Relayed,
  dependencies: GenerationDependencies,
  context: GenerationContext,
  response: ServerResponse,
): Promise<void> {
  const usageOfProduced = () => resolveUsage(relayed.reported, context.upstreamRequest, relayed.produced);
  // What a stream cut short delivered is billed; nothing delivered releases the hold whole.
  const settleCut = (cutOutcome: Exclude<Outcome, "completed">) => {
    if (nothingProduced(relayed.produced)) voidHold(context, cutOutcome);
    else void postUsage(context, cutOutcome, usageOfProduced());
  };
  switch (outcome) {
    case "completed": {
      const usage = usageOfProduced();
      await untilDurable(postUsage(context, outcome, usage), context, dependencies);
      // The client may have gone while the usage was written: there is no one to complete for.
      if (!response.writableEnded) relayed.open().complete(relayed.finishReason, usage.client);
      return;
    }
    case "client-disconnected":
      settleCut(outcome);
      return;
    case "upstream-failed":
    case "shutdown":
    case "deadline-exceeded":
    case "interrupted": {
      settleCut(outcome);
      const error =
        outcome === "upstream-failed" ? toApiError(relayed.failure) : cutErrorOf(outcome, dependencies);
      if (!relayed.clientStream) throw outcome === "upstream-failed" ? relayed.failure : error;
      // Before output the edge logs the failure with its answer; after it, only this line says what the
      // upstream did (a broken body, a usage that cannot be billed).
      if (outcome === "upstream-failed")
        dependencies.logger.error(
          { err: relayed.failure, requestId: context.requestId },
          "stream failed after output; billed what it delivered",
        );
      // Sent as the stream's error event: the activity log tells why the stream ended from it.
      if (context.observation) context.observation.error ??= error;
      if (!response.writableEnded) relayed.clientStream.fail(error);
      return;
    }
    default: {
      const unreachable: never = outcome;
      throw new Error(`unknown outcome ${unreachable}`);
    }
  }
}

/**
 * Whether the request may deliver more: at once while its hold was confirmed recently (every request of a
 * process that reaches the database); else once the next record answers, or false when the request is
 * aborted meanwhile (its client gone, a cut), which ends a wait through a database outage.
 */
function stillHeld(hold: RequestHold, signal: AbortSignal): true | Promise<boolean> {
  const held = hold.stillHeld();
  if (held === true) return true;
  if (signal.aborted) return Promise.resolve(false);
  return new Promise<boolean>((resolve) => {
    const aborted = () => resolve(false);
    signal.addEventListener("abort", aborted, { once: true });
    void held.then((answer) => {
      signal.removeEventListener("abort", aborted);
      resolve(answer);
    });
  });
}

/**
 * A request that produced nothing releases its hold whole, and the activity log is told how it ended (it has
 * no usage to learn that from): cut by the gateway, by its client, or failed upstream.
 */
function voidHold(context: GenerationContext, outcome: Exclude<Outcome, "completed">): void {
  context.observation?.endedWithout(outcome);
  context.hold.void(voidReasonOf(outcome), settledUpstreamOf(context));
}

/** A request cut with nothing produced releases its hold for this reason. */
function voidReasonOf(outcome: Exclude<Outcome, "completed">): (typeof voidReasons)[number] {
  // A hold the sweep released corrects to nothing delivered as a request the ledger cut (late-settlement.ts).
  return outcome === "interrupted" ? "ledger-unavailable" : outcome;
}

/** What the client is told of a request the gateway cut. */
function cutErrorOf(reason: GatewayCutReason, dependencies: GenerationDependencies): ApiError {
  switch (reason) {
    case "shutdown":
      return apiErrors.gatewayStopping();
    case "deadline-exceeded":
      return apiErrors.streamDeadlineExceeded(dependencies.timings.streamDeadlineMs);
    case "interrupted":
      return apiErrors.holdReleased();
    default: {
      const unreachable: never = reason;
      throw new Error(`unknown cut ${unreachable}`);
    }
  }
}

/** The attempts for the settlement, and the answering model when a fallback answered (it is billed). */
function settledUpstreamOf(context: GenerationContext): SettledUpstream {
  const fallback = fallbackAnsweringOf(context);
  return { attempts: context.upstream.attempts, ...(fallback === null ? {} : { answeringModel: fallback }) };
}

/** The fallback answering the request, once one has begun to (C13); null while the one requested does. */
function fallbackAnsweringOf(context: GenerationContext): string | null {
  const answering = context.upstream.answeringModel.slug;
  return answering === context.model.slug ? null : answering;
}

function nothingProduced(produced: Produced): boolean {
  return produced.text === "" && !produced.refusal && produced.toolCalls.length === 0;
}

/** The usage replaces the hold; resolves once it is durable in the ledger. */
function postUsage(context: GenerationContext, outcome: Outcome, usage: ResolvedUsage): Promise<void> {
  const upstream = settledUpstreamOf(context);
  context.observation?.used(usage.tokens, outcome, upstream.answeringModel);
  return context.hold.post({ tokens: usage.tokens, usageSource: usage.source, outcome, upstream });
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

/** `chatcmpl-<ms>` or `resp-<ms>` (interface.md), as the reply's body says. */
function responseIdOf(endpoint: ClientFormat["endpoint"], replyMs: number): string {
  return endpoint === "chat.completions" ? chatCompletionIdOf(replyMs) : responseIdsOf(replyMs).responseId;
}
