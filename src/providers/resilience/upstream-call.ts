import { setTimeout as sleep } from "node:timers/promises";
import { counted } from "../../kernel/counted";
import type { CatalogModel } from "../catalog";
import {
  type GenerationRequest,
  type GenerationResult,
  type GenerationStreamPart,
  UpstreamFailedError,
  UpstreamRejectedError,
  UpstreamThrottledError,
} from "../provider";
import type { UpstreamAdapter } from "../upstream-adapter";
import { backoffDelayMs } from "./backoff";
import type { ResilienceLimits } from "./resilience-limits";
import type { UpstreamAttempt } from "./upstream-attempt";
import { pickByWeight, type RouteEntry, type UpstreamEndpoint } from "./upstream-endpoint";
import { type AttemptFailure, attemptFailureOf } from "./upstream-failure";

/** A model and the endpoints that serve it, in the order the call tries models (requested, then fallbacks). */
export interface ModelRoute {
  readonly model: CatalogModel;
  readonly entries: readonly RouteEntry[];
}

/** What the call reports as it goes, for metrics; never a URL or key. */
export interface UpstreamObserver {
  attempted(attempt: UpstreamAttempt, retry: boolean): void;
  outstandingChanged(endpoint: UpstreamEndpoint): void;
  answeredByFallback(requested: string, answering: string): void;
}

export interface UpstreamCallOptions {
  /** The requested model first, then its fallbacks. */
  chain: readonly ModelRoute[];
  /** The request for a model of the chain; null when that (fallback) model cannot take it: it is skipped. */
  requestFor: (model: CatalogModel) => GenerationRequest | null;
  limits: ResilienceLimits;
  observer: UpstreamObserver;
}

type Start<T> = (adapter: UpstreamAdapter, request: GenerationRequest, signal: AbortSignal) => Promise<T>;

interface Answered<T> {
  value: T;
  entry: RouteEntry;
  /** Undoes the attempt's hold on its endpoint and its link to the caller's signal; call once. */
  release: () => void;
}

/** Why the call stopped short of an answer, when its last attempt is not the whole story. */
type Shortfall = { kind: "throttled"; untilMs: number } | { kind: "capacity" } | { kind: "unavailable" };

/** Where the next attempt may go: `panic` when every usable endpoint's breaker refused and this one goes anyway. */
type Choice = { route: ModelRoute; entries: RouteEntry[]; panic: boolean };

class DeadlinePassed extends Error {
  override readonly name = "DeadlinePassed";
}

/**
 * One request's way to an answer (C13): attempts over the endpoints of the requested model and then of its
 * fallbacks, until one answers, up to `attemptsMax` attempts and the request's deadline. Only failures
 * before output are retried: a JSON call is answered when its reply has arrived, a stream when its first
 * parts have; after that, what fails is the caller's to handle. An attempt prefers an endpoint this request
 * has not tried yet, among those whose breaker lets it through and that have room; a `Retry-After` keeps
 * this request off that endpoint until then. Each attempt is recorded in `attempts`.
 *
 * Breakers thin and reorder this traffic; they never answer by themselves (C13): when every endpoint the
 * request could use is open, it makes one panic attempt, at the endpoint that failed least recently, and
 * no further attempt at an open endpoint. When the call ends, each endpoint it reached hears once what the
 * request came to there (served, or failed by the endpoint's fault), so breakers open on failed requests,
 * not on attempts a retry on the same endpoint then served.
 */
export class UpstreamCall {
  readonly attempts: UpstreamAttempt[] = [];
  private answeringRoute: ModelRoute;
  private panicAttemptMade = false;
  /** The endpoints (as the model attempted uses them) where an attempt failed by the endpoint's fault. */
  private readonly failedAt = new Set<RouteEntry>();
  private readonly requests = new Map<string, GenerationRequest | null>();

  constructor(private readonly options: UpstreamCallOptions) {
    if (options.chain.length === 0) throw new Error("an upstream call needs at least its own model");
    this.answeringRoute = options.chain[0]!;
  }

  /** The model that answered (the requested one until a fallback does). */
  get answeringModel(): CatalogModel {
    return this.answeringRoute.model;
  }

  async generate(signal: AbortSignal): Promise<GenerationResult> {
    const answered = await this.answer(signal, (adapter, request, attemptSignal) =>
      adapter.generate(request, attemptSignal),
    );
    answered.release();
    return answered.value;
  }

  async *stream(signal: AbortSignal): AsyncGenerator<GenerationStreamPart[]> {
    const answered = await this.answer(signal, async (adapter, request, attemptSignal) => {
      const iterator = adapter.stream(request, attemptSignal)[Symbol.asyncIterator]();
      try {
        return { iterator, first: await iterator.next() };
      } catch (error) {
        await iterator.return?.().catch(() => {});
        throw error;
      }
    });
    const { iterator, first } = answered.value;
    let finished = first.done === true;
    try {
      if (first.done) return;
      yield first.value;
      for (;;) {
        const next = await iterator.next();
        if (next.done) {
          finished = true;
          return;
        }
        yield next.value;
      }
    } finally {
      if (!finished) await iterator.return?.().catch(() => {});
      answered.release();
    }
  }

  private async answer<T>(signal: AbortSignal, start: Start<T>): Promise<Answered<T>> {
    const { limits } = this.options;
    const deadlineAtMs = Date.now() + limits.requestDeadlineMs;
    // One signal for every attempt of the call: aborted by the caller, or at the deadline before output. A
    // failed attempt leaves it as it was, so the next attempt uses it too (one timer and listener a call).
    const link = new CallerLink(signal);
    const deadline = setTimeout(abortAtDeadline, limits.requestDeadlineMs, link.controller);
    try {
      const answered = await this.attemptUntilAnswered(link.controller.signal, deadlineAtMs, start);
      this.reportToBreakers(answered.entry);
      return {
        value: answered.value,
        entry: answered.entry,
        release: () => {
          link.unlink();
          answered.release();
        },
      };
    } catch (error) {
      link.unlink();
      // A request the caller gave up on says nothing of the endpoints; one that failed, what the client saw.
      if (!signal.aborted) this.reportToBreakers(undefined);
      throw error;
    } finally {
      clearTimeout(deadline);
    }
  }

  /** Tells each endpoint this request reached what it came to there: served (`answeredBy`) or failed. */
  private reportToBreakers(answeredBy: RouteEntry | undefined): void {
    const nowMs = Date.now();
    if (answeredBy) answeredBy.breaker.recordRequest(false, nowMs);
    for (const entry of this.failedAt) if (entry !== answeredBy) entry.breaker.recordRequest(true, nowMs);
  }

  private async attemptUntilAnswered<T>(
    signal: AbortSignal,
    deadlineAtMs: number,
    start: Start<T>,
  ): Promise<Answered<T>> {
    const { limits } = this.options;
    // Tried per model at each endpoint: an endpoint failing the model may still serve a fallback there.
    const tried = new Set<RouteEntry>();
    const notBefore = new Map<UpstreamEndpoint, number>();
    let lastFailure: { error: Error; failure: AttemptFailure } | undefined;
    for (let iteration = 0; iteration < limits.attemptsMax; iteration += 1) {
      if (iteration > 0) {
        const delayMs = backoffDelayMs(iteration, limits, Math.random);
        const after = this.choose(Date.now() + delayMs, tried, notBefore);
        if (
          "shortfall" in after &&
          after.shortfall.kind === "throttled" &&
          after.shortfall.untilMs > deadlineAtMs
        )
          throw this.exhausted(lastFailure, after.shortfall);
        if (Date.now() + delayMs > deadlineAtMs) throw this.exhausted(lastFailure, undefined);
        await this.pause(delayMs, signal);
      }
      let choice = this.choose(Date.now(), tried, notBefore);
      if ("shortfall" in choice && choice.shortfall.kind === "throttled") {
        if (choice.shortfall.untilMs > deadlineAtMs) throw this.exhausted(lastFailure, choice.shortfall);
        await this.pause(choice.shortfall.untilMs - Date.now(), signal);
        choice = this.choose(Date.now(), tried, notBefore);
      }
      if ("shortfall" in choice) {
        if (choice.shortfall.kind === "unavailable") throw this.exhausted(lastFailure, choice.shortfall);
        // At capacity, or throttled again: wait a backoff and look again, within the attempt bound.
        if (iteration === limits.attemptsMax - 1) throw this.exhausted(lastFailure, choice.shortfall);
        continue;
      }
      const entry = pickByWeight(choice.entries)!;
      if (choice.panic) this.panicAttemptMade = true;
      // A retry follows an attempt of this request, not a wait for room at a full endpoint.
      const retry = this.attempts.length > 0;
      const outcome = await this.attempt(choice.route, entry, signal, start, retry, choice.panic);
      if ("answered" in outcome) return outcome.answered;
      const { error, failure } = outcome;
      if (!failure.retryable) {
        // A rejection is the request's own fault and says so; a failure says how many attempts led to it (C13).
        if (error instanceof UpstreamRejectedError) throw error;
        throw this.exhausted({ error, failure }, undefined);
      }
      tried.add(entry);
      if (failure.retryAfterMs !== undefined)
        notBefore.set(entry.endpoint, Date.now() + failure.retryAfterMs);
      lastFailure = { error, failure };
    }
    throw this.exhausted(lastFailure, undefined);
  }

  /** One attempt on `signal`, the call's: aborted by the caller (cancelled) or at the deadline. */
  private async attempt<T>(
    route: ModelRoute,
    entry: RouteEntry,
    signal: AbortSignal,
    start: Start<T>,
    retry: boolean,
    panic: boolean,
  ): Promise<{ answered: Answered<T> } | { error: Error; failure: AttemptFailure }> {
    const endpoint = entry.endpoint;
    const request = this.requestOf(route.model, entry);
    if (request === null) throw new Error(`an attempt at ${route.model.slug}, which cannot take the request`);
    const breaker = entry.breaker;
    const permit = breaker.acquire(Date.now(), panic);
    endpoint.outstanding += 1;
    this.options.observer.outstandingChanged(endpoint);
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      endpoint.outstanding -= 1;
      this.options.observer.outstandingChanged(endpoint);
    };
    const startedMs = performance.now();
    try {
      const value = await start(endpoint.adapter(route.model.protocol), request, signal);
      breaker.recordAttempt(permit, false, Date.now());
      this.record(route, endpoint, startedMs, 200, null, retry);
      if (route !== this.options.chain[0])
        this.options.observer.answeredByFallback(this.options.chain[0]!.model.slug, route.model.slug);
      this.answeringRoute = route;
      return { answered: { value, entry, release } };
    } catch (error) {
      release();
      if (signal.reason instanceof DeadlinePassed) {
        // Still without output when the request's time ran out: a timeout at this endpoint, which the
        // breaker counts as the upstream's own would be (else an endpoint that never answers never opens).
        breaker.recordAttempt(permit, true, Date.now());
        this.failedAt.add(entry);
        this.record(route, endpoint, startedMs, null, "deadline", retry);
        throw new UpstreamFailedError(
          "timeout",
          `upstream did not answer within the request's deadline of ${this.options.limits.requestDeadlineMs} ms; ${counted(this.attempts.length, "attempt")} made`,
        );
      }
      if (signal.aborted) {
        breaker.recordAttempt(permit, undefined, Date.now());
        this.record(route, endpoint, startedMs, null, "cancelled", retry);
        throw signal.reason ?? error;
      }
      const failure = attemptFailureOf(error);
      breaker.recordAttempt(permit, failure?.breakerFailure, Date.now());
      if (failure?.breakerFailure) this.failedAt.add(entry);
      if (!failure) throw error;
      this.record(route, endpoint, startedMs, failure.status, failure.error, retry);
      return { error: error as Error, failure };
    }
  }

  private record(
    route: ModelRoute,
    endpoint: UpstreamEndpoint,
    startedMs: number,
    status: number | null,
    error: UpstreamAttempt["error"],
    retry: boolean,
  ): void {
    const attempt: UpstreamAttempt = {
      endpoint: endpoint.name,
      model: route.model.slug,
      status,
      error,
      durationMs: Math.round(performance.now() - startedMs),
    };
    this.attempts.push(attempt);
    this.options.observer.attempted(attempt, retry);
  }

  /**
   * The endpoints an attempt at `atMs` may go to: those of the first model of the chain with an endpoint
   * where this request has not tried that model (the untried ones), else all usable ones of the first with
   * any; when every endpoint that could take the request is refused by its breaker only, the one that failed
   * least recently, as this request's one panic attempt. None: why not. Free of side effects (the pick by
   * weight is the caller's), so it may be asked ahead of time.
   */
  private choose(
    atMs: number,
    tried: ReadonlySet<RouteEntry>,
    notBefore: ReadonlyMap<UpstreamEndpoint, number>,
  ): Choice | { shortfall: Shortfall } {
    let throttledUntilMs: number | undefined;
    let atCapacity = false;
    let panic: { route: ModelRoute; entry: RouteEntry } | undefined;
    // The breaker is asked about now: a future instant would move its state early.
    const nowMs = Date.now();
    const candidates = this.options.chain.map((route) => ({
      route,
      entries: route.entries.filter((entry) => {
        const endpoint = entry.endpoint;
        if (this.requestOf(route.model, entry) === null) return false;
        const throttledUntil = notBefore.get(endpoint);
        if (throttledUntil !== undefined && throttledUntil > atMs) {
          throttledUntilMs = Math.min(throttledUntilMs ?? throttledUntil, throttledUntil);
          return false;
        }
        if (!endpoint.hasCapacity()) {
          atCapacity = true;
          return false;
        }
        if (entry.breaker.allows(nowMs)) return true;
        if (!panic || entry.breaker.lastFailedAtMs < panic.entry.breaker.lastFailedAtMs)
          panic = { route, entry };
        return false;
      }),
    }));
    const untried = candidates.find(({ entries }) => entries.some((entry) => !tried.has(entry)));
    if (untried)
      return {
        route: untried.route,
        entries: untried.entries.filter((candidate) => !tried.has(candidate)),
        panic: false,
      };
    const any = candidates.find(({ entries }) => entries.length > 0);
    if (any) return { ...any, panic: false };
    if (throttledUntilMs !== undefined)
      return { shortfall: { kind: "throttled", untilMs: throttledUntilMs } };
    if (panic && !this.panicAttemptMade) return { route: panic.route, entries: [panic.entry], panic: true };
    return { shortfall: atCapacity ? { kind: "capacity" } : { kind: "unavailable" } };
  }

  /** Whole seconds until an endpoint of the chain takes ordinary attempts again, when none does now. */
  private breakersReopenInSeconds(): number | undefined {
    const nowMs = Date.now();
    let soonestMs = Number.POSITIVE_INFINITY;
    for (const route of this.options.chain) {
      // A fallback that cannot take the request is no way to an answer, however its breakers stand.
      if (this.requestFor(route.model) === null) continue;
      for (const { breaker } of route.entries) soonestMs = Math.min(soonestMs, breaker.reopensInMs(nowMs));
    }
    if (soonestMs === 0 || soonestMs === Number.POSITIVE_INFINITY) return undefined;
    return Math.max(1, Math.ceil(soonestMs / 1_000));
  }

  /** The request for a model on an endpoint; null when that (fallback) model cannot take it. */
  private requestOf(model: CatalogModel, entry: RouteEntry): GenerationRequest | null {
    const request = this.requestFor(model);
    if (request === null || entry.upstreamModelId === undefined) return request;
    return { ...request, upstreamModelId: entry.upstreamModelId };
  }

  /** The request as `model` takes it, built once; null for a fallback that cannot take it. */
  private requestFor(model: CatalogModel): GenerationRequest | null {
    let request = this.requests.get(model.slug);
    if (request === undefined) {
      request = this.options.requestFor(model);
      if (request === null && model === this.options.chain[0]!.model)
        throw new Error(`the request for ${model.slug} itself was refused after it was accepted`);
      this.requests.set(model.slug, request);
    }
    return request;
  }

  private async pause(delayMs: number, signal: AbortSignal): Promise<void> {
    if (delayMs <= 0) return;
    try {
      await sleep(delayMs, undefined, { signal });
    } catch {
      if (!(signal.reason instanceof DeadlinePassed)) throw signal.reason;
      throw new UpstreamFailedError(
        "timeout",
        `upstream did not answer within the request's deadline of ${this.options.limits.requestDeadlineMs} ms; ${counted(this.attempts.length, "attempt")} made`,
      );
    }
  }

  /** C13's answer when no attempt answered: 429 with when to come back if throttled, else 500/300. */
  private exhausted(
    last: { error: Error; failure: AttemptFailure } | undefined,
    shortfall: Shortfall | undefined,
  ): Error {
    const made = `${counted(this.attempts.length, "attempt")} made`;
    const slug = this.options.chain[0]!.model.slug;
    const throttledUntilMs =
      shortfall?.kind === "throttled" ? shortfall.untilMs : Date.now() + (last?.failure.retryAfterMs ?? 0);
    const throttledSeconds = Math.max(1, Math.ceil((throttledUntilMs - Date.now()) / 1_000));
    // A 429 answers 429; a 5xx whose Retry-After outlasted the deadline stays the failure it was (C13).
    const rateLimited =
      last?.failure.status === 429 ||
      (shortfall?.kind === "throttled" && this.attempts.some((attempt) => attempt.status === 429));
    if (rateLimited)
      return new UpstreamThrottledError(
        throttledSeconds,
        `upstream is rate limiting requests for ${slug} (HTTP 429); ${made}; retry after ${throttledSeconds} s`,
      );
    const breakersReopenInSeconds = this.breakersReopenInSeconds();
    const circuit =
      breakersReopenInSeconds === undefined
        ? ""
        : `; circuit open, next probe in ${breakersReopenInSeconds} s`;
    if (last) {
      const error = last.error;
      const reason = error instanceof UpstreamFailedError ? error.reason : "status";
      if (shortfall?.kind === "throttled")
        return new UpstreamFailedError(
          reason,
          `${error.message}; ${made}; retry after ${throttledSeconds} s${circuit}`,
          last.failure.status ?? undefined,
          Math.max(throttledSeconds, breakersReopenInSeconds ?? 0),
        );
      return new UpstreamFailedError(
        reason,
        `${error.message}; ${made}${circuit}`,
        last.failure.status ?? undefined,
        breakersReopenInSeconds,
      );
    }
    if (shortfall?.kind === "capacity")
      return new UpstreamThrottledError(
        1,
        `every upstream endpoint of ${slug} is at its concurrency limit; ${made}`,
      );
    return new UpstreamFailedError(
      "unavailable",
      `every upstream endpoint of ${slug} is unavailable (circuit open); ${made}`,
      undefined,
      breakersReopenInSeconds ?? 1,
    );
  }
}

/**
 * Aborts the call's own controller when the caller's signal aborts, with the caller's reason. An object
 * listener rather than a closure: it is made once per request, on the hot path.
 */
class CallerLink {
  readonly controller = new AbortController();

  constructor(private readonly caller: AbortSignal) {
    if (caller.aborted) this.controller.abort(caller.reason);
    else caller.addEventListener("abort", this, { once: true });
  }

  handleEvent(): void {
    this.controller.abort(this.caller.reason);
  }

  unlink(): void {
    this.caller.removeEventListener("abort", this);
  }
}

function abortAtDeadline(controller: AbortController): void {
  controller.abort(new DeadlinePassed("the request's deadline passed"));
}
