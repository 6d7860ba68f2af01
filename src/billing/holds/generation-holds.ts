import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import { wasNeverSent } from "../../database/pool";
import { isRolledBack } from "../../database/sql-state";
import { AssertionError, assert } from "../../kernel/assert";
import { limits } from "../../kernel/limits";
import { Money } from "../../kernel/money";
import { type ThrottledLog, throttledLog } from "../../kernel/throttled-log";
import {
  type AccountReference,
  accountNameOf,
  type EventData,
  parseLedgerEvent,
  type RecordedUpstreamAttempt,
  type UsageOutcome,
  type UsageSource,
  type UsageTokens,
  type voidReasons,
} from "../../ledger/events";
import { billingMetrics } from "../billing-metrics";
import { keyKindLabelOf } from "../metric-labels";
import { assertHoldWithinFunds, assertWonNotNegative } from "../money-invariants";
import { type PricingInForce, PricingUnavailableError } from "../read-models/pricing-read-model";
import type { HoldAuthorizer } from "./hold-authorizer";
import { costWonOf, type HoldPricing } from "./hold-pricing";
import type { HoldProgress, ProgressSoFar } from "./hold-progress";
import { HoldRefusedError, type KeyLimitKind, LedgerUnavailableError } from "./hold-refusal";
import { AccountRowsLockedError } from "./usage-authorizations";
import { UsageOutbox } from "./usage-outbox";

/**
 * The money side of one generation request (C10), as a card authorization:
 * - authorize: a hold on the paying account, placed atomically in the ledger, for an estimate that errs
 *   high — the request body's bytes as input tokens (a token is at least one byte) and `max_tokens`, or
 *   a named expected output, as output — priced with the price, FX rate and discount in force;
 * - post: once answered, `UsageRecorded` turns the hold into the exact cost, pending until charged;
 * - void: a request that produced nothing releases its hold whole.
 *
 * Normally the hold is placed while the upstream call is already on its way (asked for once the caller's
 * `placeAfter` says the upstream request has left), and no output leaves before it is durable. Where this
 * process's view says the account is near its limit, the ledger just failed, or the account's row was
 * held a moment ago (hold-authorizer.ts), the hold is placed first and the upstream called after: a flood on
 * an empty account, or a request while the ledger is down, costs no upstream call.
 */

export interface HoldLimits {
  /** Output tokens a hold assumes when the request names no maximum. */
  expectedOutputTokens: number;
  /** Hold first when the account has room for fewer than this many holds of this size. */
  holdFirstBelowHolds: number;
  /** A hold still open this long after its request started is settled as interrupted. */
  holdLifetimeMs: number;
  /** A refused hold waits at most this long for its account's settlements being written, then tries again. */
  refusalRecheckWaitMs: number;
  /**
   * A request waits at most this long for its hold's statement to answer, then is refused as the ledger being
   * away (a database that takes statements and says nothing: frozen, or cut off without a reset).
   */
  answerWaitMs: number;
}

export interface GenerationHoldsOptions {
  authorizer: Pick<HoldAuthorizer, "authorize" | "isSetApart">;
  pricing: HoldPricing;
  outbox: UsageOutbox;
  progress: Pick<HoldProgress, "track" | "stillHeld" | "clockMs">;
  /** The database's view of what an account has available now, or null when it has no funds row. */
  availableNow: (account: AccountReference) => Promise<string | null>;
  gatewayInstance: string;
  limits: HoldLimits;
  logger: Logger;
  /**
   * Told of each hold refused by one of its key's own limits (`key.limit_reached`, C14); the refusal is
   * answered once what it returns settles (its alert durable), and regardless of a failure (logged).
   */
  onKeyLimitRefused?: (refusal: KeyLimitRefusalNotice) => Promise<void> | void;
}

export interface KeyLimitRefusalNotice {
  keyId: string;
  account: AccountReference;
  limit: { kind: KeyLimitKind; value: string };
  at: Date;
}

export interface HoldRequest {
  requestId: string;
  keyId: string;
  account: AccountReference;
  userId: string | null;
  organizationId: string | null;
  /** The organization whose discount applies; null for personal keys (C7). */
  discountOrganizationId: string | null;
  /** What the admission read last saw available to the account; null when unknown. */
  availableWon: string | null;
  /**
   * Whether the key has a spend or rate limit: its hold then goes first, since this process cannot tell
   * how near the limit the key is, and a refused request must reach no upstream.
   */
  keyHasLimits: boolean;
  model: string;
  /**
   * The fallbacks that may answer instead (C13), in the order they would be tried: the hold is priced as
   * the dearest of the models that may answer, so that whichever does, the request costs no more than its
   * estimate (C10's overdraft bound, and a key's spend limit, rest on that).
   */
  fallbackModels: readonly string[];
  endpoint: EventData<"UsageAuthorized">["endpoint"];
  streamed: boolean;
  startedAt: Date;
  bodyBytes: number;
  maxOutputTokens: number | undefined;
}

export interface UsageToSettle {
  tokens: UsageTokens;
  usageSource: UsageSource;
  outcome: UsageOutcome;
  /** Upstream resilience (C13): what the request's attempts were, and which model answered. */
  upstream?: SettledUpstream;
}

/**
 * The upstream side of a settlement (C13). `answeringModel` is set when a fallback answered: the usage is
 * recorded under it, so its charge and its pending cost are priced as that model.
 */
export interface SettledUpstream {
  attempts: readonly RecordedUpstreamAttempt[];
  answeringModel?: string;
}

export interface RequestHold {
  /** Place the hold before calling the upstream (see the class comment). */
  readonly holdFirst: boolean;
  /**
   * Resolves once the hold is placed — durable for a stream; for a JSON answer, durable by the commit of
   * its usage, which the answer waits for — and rejects with why there is no hold (hold-refusal.ts: the
   * funds, a key limit, the ledger).
   */
  readonly placed: Promise<void>;
  /**
   * Once the hold is placed, until it settles: its renewal, the output so far, the input its upstream
   * reported and the fallback answering, recorded every few seconds with the process's other requests
   * (hold-progress.ts).
   * `onReleased`: the orphan sweep settled the hold meanwhile (it presumed this process dead); the request
   * must deliver nothing more.
   */
  trackProgress(progressSoFar: ProgressSoFar, onReleased: () => void): void;
  /**
   * Whether the request may deliver more output now: true while its hold was confirmed recently, else the
   * next record's answer (HoldProgress.stillHeld). Only once progress is tracked.
   */
  stillHeld(): true | Promise<boolean>;
  /** The usage replaces the hold; resolves once it is durable in the ledger. */
  post(usage: UsageToSettle): Promise<void>;
  /** After a request that produced nothing: the hold is released whole. */
  void(reason: (typeof voidReasons)[number], upstream?: SettledUpstream): void;
}

/**
 * A request's estimate (its `UsageAuthorized.estimate`), the pricing of the model requested (its usage's,
 * when that model answers) and the pricings of every model that may answer, the estimate's dearest.
 */
interface HoldEstimate {
  pricing: PricingInForce;
  pricings: readonly PricingInForce[];
  estimate: EventData<"UsageAuthorized">["estimate"];
}

/**
 * A placed hold: its amount, the pricing it was placed under, and when it was asked for — its first
 * confirmation (HoldProgress): the statement that placed it ran after that, never before.
 */
interface Placement {
  holdWon: string;
  pricing: PricingInForce;
  askedAtMs: number;
}

export class GenerationHolds {
  private ledgerFailing = false;
  /** What each account had available after this process's last hold on it (bounded: a hint, not a truth). */
  private readonly availableAfterLastHold = new Map<string, Money>();
  /**
   * Keys whose last hold here was refused by one of their own limits: their next request holds first, so
   * a client hammering a key over its limit costs no upstream call (bounded, like the accounts).
   */
  private readonly keysAtTheirLimit = new Set<string>();
  /**
   * The estimates of this process's holds whose statements have not answered yet, by account: a burst on
   * one account counts what it has already asked for, not only the room the last answer left, so a request
   * sent upstream ahead of its hold fits beside every hold in flight here.
   */
  private readonly estimatesInFlight = new Map<string, Money>();

  /** Every request fails to place its hold while the ledger is away: a line per interval, not per request. */
  private readonly placementFailures: ThrottledLog;

  constructor(private readonly options: GenerationHoldsOptions) {
    this.placementFailures = throttledLog(options.logger, limits.ledgerOutageLogIntervalMs);
  }

  /**
   * `placeAfter`: when the hold need not come first, it is placed once the promise this returns resolves (the
   * upstream request has left), so that its pricing and statement do not delay the upstream call they overlap.
   */
  begin(request: HoldRequest, placeAfter?: () => Promise<void>): RequestHold {
    if (this.options.outbox.isFull) throw new LedgerUnavailableError();
    const known = this.modelsThatMayAnswer(request).map((model) =>
      this.options.pricing.peek(model, request.discountOrganizationId, request.startedAt),
    );
    const knownEstimate = known.every((pricing) => pricing !== undefined)
      ? this.estimateOf(request, known)
      : undefined;
    const holdFirst =
      this.ledgerFailing ||
      !knownEstimate ||
      this.nearLimit(request, knownEstimate) ||
      // Its account's row was held a moment ago: its hold may well be refused.
      this.options.authorizer.isSetApart(request.account);
    let held: Placement | undefined;
    const inFlight = knownEstimate && this.reserve(request.account, knownEstimate.estimate.estimatedWon);
    const placing = (
      holdFirst || placeAfter === undefined
        ? this.place(request, knownEstimate)
        : placeAfter().then(() => this.place(request, knownEstimate))
    ).finally(() => inFlight?.release());
    const actor = `key:${request.keyId}`;
    const keyKind = keyKindLabelOf(request.account.kind);
    const placed = answeredWithin(placing, this.options.limits.answerWaitMs, (late) => {
      // Placed after its request was refused: nothing will ever be delivered on it, so it is released whole.
      billingMetrics.observeHold({ outcome: "voided", keyKind, amountWon: late.holdWon });
      this.options.outbox.void(
        {
          requestId: request.requestId,
          account: request.account,
          releasedWon: late.holdWon,
          reason: "ledger-unavailable",
        },
        actor,
      );
    }).then((placement) => {
      held = placement;
    });
    // The caller may learn of a refusal only once the upstream answers; it must not go unhandled meanwhile.
    placed.catch(() => {});
    let untrack = () => {};
    return {
      holdFirst,
      placed,
      trackProgress: (progressSoFar, onReleased) => {
        assert(held, `progress of ${request.requestId} tracked before its hold was placed`);
        untrack = this.options.progress.track(request.requestId, progressSoFar, onReleased, held.askedAtMs);
      },
      stillHeld: () => this.options.progress.stillHeld(request.requestId),
      post: (usage) => {
        assert(held, `usage of ${request.requestId} posted without a placed hold`);
        untrack();
        const holdWon = held.holdWon;
        billingMetrics.observeHold({ outcome: "posted", keyKind, amountWon: holdWon });
        const record = (model: string, pricing: PricingInForce) => {
          const pendingWon = costWonOf(pricing, usage.tokens);
          assertWonNotNegative(pendingWon, `the cost of ${request.requestId}`);
          this.settledAgainstHold(request.account, holdWon, pendingWon);
          return this.options.outbox.record(
            {
              requestId: request.requestId,
              keyId: request.keyId,
              account: request.account,
              userId: request.userId,
              organizationId: request.organizationId,
              model,
              endpoint: request.endpoint,
              streamed: request.streamed,
              outcome: usage.outcome,
              tokens: usage.tokens,
              usageSource: usage.usageSource,
              startedAt: request.startedAt.toISOString(),
              heldWon: holdWon,
              pendingWon,
              ...(usage.upstream ? { attempts: [...usage.upstream.attempts] } : {}),
            },
            actor,
          );
        };
        const answeringModel = usage.upstream?.answeringModel;
        if (answeringModel === undefined || answeringModel === request.model)
          return record(request.model, held.pricing);
        return this.recordAsFallback(request, answeringModel, record);
      },
      void: (reason, upstream) => {
        untrack();
        placed.then(
          () => {
            assert(held, `the hold of ${request.requestId} resolved as placed without its amount`);
            billingMetrics.observeHold({ outcome: "voided", keyKind, amountWon: held.holdWon });
            this.options.outbox.void(
              {
                requestId: request.requestId,
                account: request.account,
                releasedWon: held.holdWon,
                reason,
                ...(upstream ? { attempts: [...upstream.attempts] } : {}),
              },
              actor,
            );
          },
          () => {},
        );
      },
    };
  }

  /** `knownEstimate`: the request's estimate under the pricing this process had in memory, if it had one. */
  private async place(request: HoldRequest, knownEstimate: HoldEstimate | undefined): Promise<Placement> {
    let pricing: PricingInForce;
    let askedAtMs = 0;
    let estimatedWon: string;
    let decision: Awaited<ReturnType<GenerationHoldsOptions["authorizer"]["authorize"]>>;
    try {
      const pricings = await Promise.all(
        this.modelsThatMayAnswer(request).map((model) =>
          this.options.pricing.pricingFor(model, request.discountOrganizationId, request.startedAt),
        ),
      );
      const sameAsKnown =
        knownEstimate !== undefined && pricings.every((one, index) => knownEstimate.pricings[index] === one);
      const held = sameAsKnown ? knownEstimate : this.estimateOf(request, pricings);
      pricing = held.pricing;
      const { estimate } = held;
      estimatedWon = estimate.estimatedWon;
      assertWonNotNegative(estimatedWon, `the estimate of ${request.requestId}`);
      const authorize = () => {
        askedAtMs = this.options.progress.clockMs();
        return this.options.authorizer.authorize(
          { eventId: randomUUID(), data: authorizationData(request, estimate, this.options) },
          request.streamed ? "hold-commit" : "usage-commit",
        );
      };
      // A hold does not wait for a settlement (migration 4), so one committing meanwhile may be missing
      // from its snapshot. Before refusing, once: after this process's own settlements of the account (a
      // client sending one request after another), or when the database's view of the account, read anew,
      // has room (a settlement by another process). A rate limit is not lifted by a settlement; the funds
      // and the spend limits may be.
      const settling = this.options.outbox.settlementsOf(request.account);
      decision = await authorize();
      if (
        decision.kind === "refused" &&
        decision.reason !== "rate" &&
        ((await UsageOutbox.settled(settling, this.options.limits.refusalRecheckWaitMs)) ||
          (decision.reason === "funds" && (await this.hasRoomNow(request.account))))
      ) {
        decision = await authorize();
      }
    } catch (error) {
      // A broken invariant is no outage: it must not read as the ledger being away.
      if (error instanceof AssertionError) throw error;
      // Nor is a request nothing prices (no FX rate recorded yet, a first start): nothing was held.
      if (error instanceof PricingUnavailableError) throw error;
      this.ledgerFailing = true;
      this.placementFailures.error({ err: error, requestId: request.requestId }, "placing a hold failed");
      // The statement may have committed before its answer was lost: release the hold if it exists. One never
      // sent (no connection to be had), or refused by the server (read-only, a lock wait given up) and so
      // rolled back, placed nothing: there is nothing to release.
      if (!(wasNeverSent(error) || isRolledBack(error) || error instanceof AccountRowsLockedError))
        this.options.outbox.voidIfHeld(request.requestId, request.account, `key:${request.keyId}`);
      throw new LedgerUnavailableError();
    }
    this.ledgerFailing = false;
    this.placementFailures.recovered("placing holds works again");
    const accountKey = accountNameOf(request.account);
    if (this.availableAfterLastHold.size >= limits.holdHintEntriesMax) this.availableAfterLastHold.clear();
    const keyKind = keyKindLabelOf(request.account.kind);
    if (decision.kind === "refused") {
      billingMetrics.observeHold({ outcome: "refused", keyKind, amountWon: "0" });
      this.availableAfterLastHold.set(accountKey, new Money(decision.availableWon));
      if (decision.reason === "funds")
        throw new HoldRefusedError({
          kind: "funds",
          accountKind: request.account.kind,
          availableWon: decision.availableWon,
        });
      // The key changed after this process's copy admitted the request: told as admission would tell it.
      if (!("limit" in decision))
        throw new HoldRefusedError(
          decision.reason === "key-inactive"
            ? { kind: "key-inactive" }
            : { kind: "model-not-allowed", model: request.model },
        );
      const limit = { kind: decision.reason, value: decision.limit };
      this.rememberLimitedKey(request.keyId);
      await this.noticeKeyLimit(request, limit);
      throw new HoldRefusedError({ kind: "key-limit", accountKind: request.account.kind, limit });
    }
    // What this process remembers as available after the hold rests on the hold being within the funds.
    assertHoldWithinFunds({ ...decision, estimatedWon }, request.requestId);
    this.keysAtTheirLimit.delete(request.keyId);
    billingMetrics.observeHold({ outcome: "placed", keyKind, amountWon: decision.holdWon });
    this.availableAfterLastHold.set(accountKey, new Money(decision.availableWon).minus(decision.holdWon));
    return { holdWon: decision.holdWon, pricing, askedAtMs };
  }

  /**
   * A usage settles its hold: its account gets the hold back, less what the usage cost. The hint moves by
   * that, so a usage that cost more than its hold (an upstream counting more input than the body has bytes)
   * sends the account's next request to hold first, rather than upstream ahead of a hold to be refused.
   */
  private settledAgainstHold(account: AccountReference, holdWon: string, pendingWon: string): void {
    const accountKey = accountNameOf(account);
    const available = this.availableAfterLastHold.get(accountKey);
    if (available !== undefined)
      this.availableAfterLastHold.set(accountKey, available.plus(holdWon).minus(pendingWon));
  }

  private async hasRoomNow(account: AccountReference): Promise<boolean> {
    const available = await this.options.availableNow(account);
    return available !== null && new Money(available).greaterThanOrEqualTo(1);
  }

  /**
   * A fallback answered: its pending cost is priced as the answering model (the hold was priced as the one
   * requested), at the request's start, as its charge will be. Its pricing is usually in memory already; if
   * it cannot be read at all (the ledger away), the settlement is left to the orphan sweep, which settles
   * from the hold, and the answer does not wait for it.
   */
  private recordAsFallback(
    request: HoldRequest,
    answeringModel: string,
    record: (model: string, pricing: PricingInForce) => Promise<void>,
  ): Promise<void> {
    return this.options.pricing
      .pricingFor(answeringModel, request.discountOrganizationId, request.startedAt)
      .then(
        (pricing) => record(answeringModel, pricing),
        (error: unknown) =>
          this.options.logger.error(
            { err: error, requestId: request.requestId, model: answeringModel },
            "pricing a fallback's usage failed; the orphan sweep will settle its hold",
          ),
      );
  }

  private async noticeKeyLimit(request: HoldRequest, limit: KeyLimitRefusalNotice["limit"]): Promise<void> {
    try {
      await this.options.onKeyLimitRefused?.({
        keyId: request.keyId,
        account: request.account,
        limit,
        at: new Date(),
      });
    } catch (error) {
      this.options.logger.warn(
        { err: error, requestId: request.requestId },
        "noting a key limit refusal failed",
      );
    }
  }

  private rememberLimitedKey(keyId: string): void {
    if (this.keysAtTheirLimit.size >= limits.holdHintEntriesMax) this.keysAtTheirLimit.clear();
    this.keysAtTheirLimit.add(keyId);
  }

  private nearLimit(request: HoldRequest, { estimate }: HoldEstimate): boolean {
    if (request.keyHasLimits || this.keysAtTheirLimit.has(request.keyId)) return true;
    const accountKey = accountNameOf(request.account);
    const available =
      this.availableAfterLastHold.get(accountKey) ??
      (request.availableWon === null ? undefined : new Money(request.availableWon));
    if (available === undefined) return true;
    const inFlight = this.estimatesInFlight.get(accountKey) ?? new Money(0);
    return available
      .minus(inFlight)
      .lessThan(new Money(estimate.estimatedWon).times(this.options.limits.holdFirstBelowHolds));
  }

  /** Counts a hold as in flight until `release` (once its statement has answered, either way). */
  private reserve(account: AccountReference, estimatedWon: string): { release: () => void } {
    const accountKey = accountNameOf(account);
    const amount = new Money(estimatedWon);
    this.estimatesInFlight.set(
      accountKey,
      (this.estimatesInFlight.get(accountKey) ?? new Money(0)).plus(amount),
    );
    return {
      release: () => {
        const left = this.estimatesInFlight.get(accountKey)!.minus(amount);
        assert(!left.isNegative(), `the estimates in flight on ${accountKey} went below zero`);
        if (left.isZero()) this.estimatesInFlight.delete(accountKey);
        else this.estimatesInFlight.set(accountKey, left);
      },
    };
  }

  /** The model requested, then the fallbacks that may answer instead. */
  private modelsThatMayAnswer(request: HoldRequest): string[] {
    return [request.model, ...request.fallbackModels];
  }

  /**
   * What a hold is priced from (upper bounds of the request's tokens) and its cost: under the dearest of
   * `pricings` (the requested model's first, then its fallbacks').
   */
  private estimateOf(request: HoldRequest, pricings: readonly PricingInForce[]): HoldEstimate {
    const [pricing] = pricings;
    assert(pricing !== undefined, `the hold of ${request.requestId} is priced by at least its own model`);
    const inputTokensMax = request.bodyBytes;
    const outputTokensMax = this.outputTokensMaxOf(request);
    const tokens = { input: inputTokensMax, cached: 0, output: outputTokensMax, reasoning: 0 };
    const estimatedWon = pricings
      .map((each) => costWonOf(each, tokens))
      .reduce((dearest, each) => (new Money(each).greaterThan(dearest) ? each : dearest));
    return { pricing, pricings, estimate: { inputTokensMax, outputTokensMax, estimatedWon } };
  }

  private outputTokensMaxOf(request: HoldRequest): number {
    return request.maxOutputTokens ?? this.options.limits.expectedOutputTokens;
  }
}

/**
 * The data of the request's `UsageAuthorized`, validated with the metadata the event will carry (a hold's:
 * src/ledger/schema/holds/ledger-hold-authorization.ts) as any append is; the statement fills in `holdWon`.
 */
function authorizationData(
  request: HoldRequest,
  estimate: EventData<"UsageAuthorized">["estimate"],
  options: GenerationHoldsOptions,
) {
  const data = {
    requestId: request.requestId,
    keyId: request.keyId,
    account: request.account,
    userId: request.userId,
    organizationId: request.organizationId,
    model: request.model,
    endpoint: request.endpoint,
    streamed: request.streamed,
    startedAt: request.startedAt.toISOString(),
    estimate,
    gatewayInstance: options.gatewayInstance,
    expiresAt: new Date(request.startedAt.getTime() + options.limits.holdLifetimeMs).toISOString(),
  };
  const metadata = {
    actor: `key:${request.keyId}`,
    correlationId: request.requestId,
    occurredAt: new Date().toISOString(),
  };
  parseLedgerEvent({ type: "UsageAuthorized", data: { ...data, holdWon: estimate.estimatedWon }, metadata });
  return data;
}

/**
 * `placing`, or LedgerUnavailableError once `waitMs` passed without its answer. The statement may still commit
 * after: a hold placed then is handed to `late`, which releases it (this process knows when its statement
 * answers, so the release never runs ahead of the hold it releases).
 */
function answeredWithin(
  placing: Promise<Placement>,
  waitMs: number,
  late: (placement: Placement) => void,
): Promise<Placement> {
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      placing.then(late, () => {});
      reject(new LedgerUnavailableError());
    }, waitMs);
  });
  return Promise.race([placing, bound]).finally(() => clearTimeout(timer));
}
