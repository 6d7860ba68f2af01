import type { ZodError } from "zod";
import { withoutCredentials } from "../kernel/credential-text";
import { webhookLimits } from "../kernel/limits";
import { canonicalMoney } from "../kernel/money";
import { seoulWallClockOf } from "../kernel/seoul-calendar";

/**
 * The operational errors a client can see, each with its HTTP status and application code (interface.md
 * Errors, contract C3). Created anywhere below the edge; turned into the error body once, at the edge.
 */

export const applicationCodes = {
  validation: 100,
  unauthorized: 110,
  notFound: 120,
  keyRateLimited: 130,
  keySpendLimitReached: 140,
  modelNotAllowed: 150,
  organizationRoleRefused: 160,
  modelProcessing: 300,
  organizationCreditInsufficient: 400,
  userCreditInsufficient: 401,
} as const;
export type ApplicationCode = (typeof applicationCodes)[keyof typeof applicationCodes];

export interface ApiErrorHeaders {
  /** Whole seconds after which the same request may succeed: sent as `Retry-After` (C13). */
  retryAfterSeconds?: number;
  /** The methods the path does serve, sent as `Allow` with a 405. */
  allowedMethods?: readonly string[];
  /**
   * False when sending the same request again could do twice what was done once: sent as
   * `x-should-retry: false`, which the official OpenAI-style clients obey over their own rule (they resend
   * every 408, 409, 429 and 5xx on their own, twice by default).
   */
  sendAgainSafe?: false;
}

export class ApiError extends Error {
  override readonly name = "ApiError";
  readonly retryAfterSeconds: number | undefined;
  readonly allowedMethods: readonly string[] | undefined;
  readonly sendAgainSafe: false | undefined;
  constructor(
    readonly httpStatus: number,
    readonly applicationCode: ApplicationCode,
    message: string,
    headers: ApiErrorHeaders = {},
  ) {
    super(message);
    this.retryAfterSeconds = headers.retryAfterSeconds;
    this.allowedMethods = headers.allowedMethods;
    this.sendAgainSafe = headers.sendAgainSafe;
  }
}

export const invalidApiKeyMessage = "Invalid API key";
const whereKeysComeFrom = "API keys (svc_…) are issued in the console's Keys page or with POST /llm/apis";
export const missingApiKeyMessage =
  "Missing API key: send the header Authorization: Bearer svc_… (an API key from the console or POST /llm/apis)";

/**
 * Why a presented credential is no API key, each saying what to send instead; all are the interface's
 * "invalid API key" (401/110), and none says anything about a key that exists.
 */
export const invalidApiKeyMessages = {
  withoutBearer: `${invalidApiKeyMessage}: the key was sent without "Bearer "; send the header Authorization: Bearer svc_…`,
  notBearer: `${invalidApiKeyMessage}: the Authorization header must read Bearer svc_… (the word Bearer, a space, then the key)`,
  adminToken: `${invalidApiKeyMessage}: this is the admin token, which opens only /admin; the generation API takes an API key. ${whereKeysComeFrom}`,
  otherProvider: `${invalidApiKeyMessage}: sk-… is another provider's key format; this gateway takes only its own keys. ${whereKeysComeFrom}`,
  notKeyShaped: `${invalidApiKeyMessage}: API keys start with svc_. ${whereKeysComeFrom}`,
  unknown: `${invalidApiKeyMessage}: no active key matches it (mistyped, deactivated or deleted). ${whereKeysComeFrom}; a key is shown in full only once, when issued`,
} as const;

/** Why an account route (a session's) refused: nothing presented as a session, or an API key in its place. */
export const sessionRequiredMessages = {
  noSession:
    "A logged-in session is required: send the header Authorization: Bearer <session token> (the console's sign-in, or POST /admin/sessions with the admin token); a token expired, signed out or not signed for this gateway is none",
  apiKey:
    "A logged-in session is required: this is an API key (svc_…), which opens the generation API (/llm/v1) and receipts; this route takes a session token (the console's sign-in, or POST /admin/sessions with the admin token)",
} as const;

export const apiErrors = {
  validation: (message: string) => new ApiError(400, applicationCodes.validation, message),
  unauthorized: (message = invalidApiKeyMessage) => new ApiError(401, applicationCodes.unauthorized, message),
  notFound: (message: string) => new ApiError(404, applicationCodes.notFound, message),
  /** A path served, asked with a method it does not serve: 405 with `Allow`, in the error body (100). */
  methodNotAllowed: (method: string, path: string, allowedMethods: readonly string[]) =>
    new ApiError(
      405,
      applicationCodes.validation,
      `${method} is not served at ${path}: use ${allowedMethods.join(" or ")}`,
      { allowedMethods },
    ),
  /** A slug no model answers to, pointing at the list of those that do (the caller's own list). */
  unknownModel: (slug: string, listPath = "GET /llm/v1/models") =>
    new ApiError(
      404,
      applicationCodes.notFound,
      `The model '${slug}' does not exist; ${listPath} lists the models you can use`,
    ),
  upstreamRejected: (message: string) => new ApiError(400, applicationCodes.modelProcessing, message),
  /** With `retryAfterSeconds` when every endpoint of the model is open: when the next probe goes (C13). */
  upstreamFailed: (message: string, retryAfterSeconds?: number) =>
    new ApiError(500, applicationCodes.modelProcessing, message, { retryAfterSeconds }),
  /** Every attempt was refused with 429 (C13). */
  upstreamThrottled: (message: string, retryAfterSeconds: number) =>
    new ApiError(429, applicationCodes.modelProcessing, message, { retryAfterSeconds }),
  /** Fail closed: without a working ledger nothing is generated, so nothing goes unbilled. */
  ledgerUnavailable: () =>
    new ApiError(
      503,
      applicationCodes.modelProcessing,
      "The billing ledger is unavailable; try again shortly",
    ),
  /**
   * A write recorded in the ledger whose read models did not catch up in time (every HTTP wait for a
   * projection follows its write): saying "unavailable" would invite a retry that records it twice, and so
   * would a client's automatic retry of a 503, which `x-should-retry: false` stops.
   */
  recordedNotVisibleYet: () =>
    new ApiError(
      503,
      applicationCodes.modelProcessing,
      "The change was recorded, but the ledger's read models have not caught up yet, so it is not visible; check before sending it again (a top-up sent again without its Idempotency-Key is credited twice)",
      { sendAgainSafe: false },
    ),
  /**
   * A command that lost its append to other writers of the same stream every time it decided again
   * (ledger/store/conflict-retry.ts): nothing was recorded, so sending it again is safe.
   */
  contendedChange: () =>
    new ApiError(
      503,
      applicationCodes.modelProcessing,
      "Other changes to the same record kept landing first, so this one was not recorded; send it again",
      { retryAfterSeconds: 1 },
    ),
  /**
   * A request nothing prices (C10: holds are priced): no FX rate recorded yet — a first start before its
   * default rate is recorded — or a model with no price. Fail closed, and say what an admin records.
   */
  pricingUnavailable: (reason: "no-fx-rate" | "unknown-model", model: string) =>
    new ApiError(
      503,
      applicationCodes.modelProcessing,
      reason === "no-fx-rate"
        ? "No KRW per USD rate is recorded yet, so no request can be priced; an admin records one (POST /admin/fx-rates)"
        : `No price is recorded for model ${model}, so its requests cannot be priced; an admin sets one (PUT /admin/models/${model}/price)`,
    ),
  /** Below ₩1 available (C3, C10): how much the paying account has, and how it gets more. */
  creditInsufficient: (accountKind: "user" | "organization", availableWon: string) =>
    accountKind === "organization"
      ? new ApiError(
          400,
          applicationCodes.organizationCreditInsufficient,
          `Organization credit is insufficient: ${creditAdviceOf("organization", availableWon)}`,
        )
      : new ApiError(
          400,
          applicationCodes.userCreditInsufficient,
          `User credit is insufficient: ${creditAdviceOf("user", availableWon)}`,
        ),
  /**
   * A key over its rate limit (C13): 429 with the whole seconds until its window lets a request in, which
   * the official clients' own retry honours.
   */
  keyRateLimited: (requestsPerMinute: string, retryAfterSeconds: number) =>
    new ApiError(
      429,
      applicationCodes.keyRateLimited,
      `This API key reached its rate limit of ${requestsPerMinute} requests per minute; retry after ${retryAfterSeconds} s`,
      { retryAfterSeconds },
    ),
  /**
   * An endpoint with as many test messages waiting for delivery as it may have (they are retried for a day,
   * from the outbox every account shares): 429/130, once one is delivered or given up.
   */
  testMessagesThrottled: () =>
    new ApiError(
      429,
      applicationCodes.keyRateLimited,
      `This endpoint already has ${webhookLimits.pendingTestMessagesMax} test messages waiting for delivery; send another once one is delivered (GET …/deliveries)`,
      { retryAfterSeconds: webhookLimits.testMessagesRetryAfterSeconds },
    ),
  /**
   * A key over a spend limit (C13): 400/140, the message naming the limit, and for a monthly one when it
   * resets (the next Asia/Seoul calendar month). Retrying does not help, so no Retry-After.
   */
  keySpendLimitReached: (
    limit: { kind: "monthly-spend"; value: string; resetsAt: Date } | { kind: "total-spend"; value: string },
  ) => new ApiError(400, applicationCodes.keySpendLimitReached, spendLimitMessageOf(limit)),
  /**
   * A model the key may not call (C14): 403/150, refused before any hold. Asking again does not help; the
   * key's list of models does, and GET /llm/v1/models shows it.
   */
  modelNotAllowed: (model: string) =>
    new ApiError(
      403,
      applicationCodes.modelNotAllowed,
      `This API key may not call the model '${model}'; GET /llm/v1/models lists the models it may call`,
    ),
  /** The session's role in its organization may not do this (C14): 403/160; an owner or admin may. */
  organizationRoleRefused: (message: string) =>
    new ApiError(403, applicationCodes.organizationRoleRefused, message),
  internal: () => new ApiError(500, applicationCodes.modelProcessing, "Internal error"),
  /** The drain bound of a stop was reached with the request still running; what it delivered is billed. */
  gatewayStopping: () =>
    new ApiError(
      503,
      applicationCodes.modelProcessing,
      "The gateway is shutting down and ended this request before it completed; send it again",
    ),
  /**
   * The orphan sweep released the request's hold, presuming this gateway process dead (paused, or out of
   * touch with the database for too long): it delivers nothing more (C10). What was delivered is billed.
   */
  holdReleased: () =>
    new ApiError(
      503,
      applicationCodes.modelProcessing,
      "This gateway was out of touch with the billing ledger long enough that the request's hold was released, so the request was ended; what was delivered is billed. Send it again",
      { retryAfterSeconds: 1 },
    ),
  /** A stream ran past the gateway's total stream deadline; what it delivered is billed. */
  streamDeadlineExceeded: (deadlineMs: number) =>
    new ApiError(
      504,
      applicationCodes.modelProcessing,
      `The stream ran past the gateway's stream deadline of ${Math.round(deadlineMs / 1_000)} s and was ended`,
    ),
};

function spendLimitMessageOf(
  limit: { kind: "monthly-spend"; value: string; resetsAt: Date } | { kind: "total-spend"; value: string },
): string {
  switch (limit.kind) {
    case "monthly-spend":
      return (
        `This API key reached its monthly spend limit of ${wonText(limit.value)}; ` +
        `it resets at ${seoulWallClockOf(limit.resetsAt)} (the next Asia/Seoul calendar month)`
      );
    case "total-spend":
      return `This API key reached its total spend limit of ${wonText(limit.value)}`;
    default: {
      const unreachable: never = limit;
      throw new Error(`unknown key limit ${JSON.stringify(unreachable)}`);
    }
  }
}

/**
 * Only the paying account's own figure, which the key's holder may read (GET /llm/balance), and the
 * route an administrator tops it up by, named by its kind, not by any id.
 */
function creditAdviceOf(accountKind: "user" | "organization", availableWon: string): string {
  const whose = accountKind === "organization" ? "the organization" : "your account";
  return (
    `${whose} has ${wonText(availableWon)} available (its balance less what running requests hold or may ` +
    "still cost, and what is not yet charged), and a request needs at least ₩1. Ask an administrator to top it up " +
    `(the console's Accounts page, or POST /admin/accounts/${accountKind}/{id}/credits); ` +
    "GET /llm/balance shows the balance"
  );
}

/**
 * "₩1,234,567.5", "-₩3.2": the amount exactly, in the API's one form of money (no trailing zeros, as a
 * NUMERIC computation may leave them), its whole part grouped as ko-KR groups it.
 */
function wonText(decimal: string): string {
  const canonical = canonicalMoney(decimal);
  const negative = canonical.startsWith("-");
  const [whole = "0", fraction] = (negative ? canonical.slice(1) : canonical).split(".");
  const grouped = whole.replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  return `${negative ? "-" : ""}₩${grouped}${fraction ? `.${fraction}` : ""}`;
}

/**
 * A zod failure as one readable sentence naming the field: `temperature: must be at most 2`. A field the body
 * does not have is named first, though zod reports it last: a misspelt field (`inputUsdPer1m`) is why its
 * right spelling is missing, and the message then shows that spelling too.
 */
export function validationErrorOf(error: ZodError): ApiError {
  const issue = error.issues.find((each) => each.code === "unrecognized_keys") ?? error.issues[0];
  if (!issue) return apiErrors.validation("Invalid request");
  // zod reports unknown fields on their object; the field itself is named, as every other field is.
  const unknownField = issue.code === "unrecognized_keys";
  const path = (unknownField ? [...issue.path, issue.keys[0]!] : issue.path).map(String).join(".");
  const message =
    unknownField && zodUnknownFieldWording.test(issue.message) ? unknownFieldMessage : issue.message;
  return apiErrors.validation(path ? `${path}: ${message}` : message);
}

/** zod's default words for an unknown field (`Unrecognized key: "x"`), where a schema gives none of its own. */
const zodUnknownFieldWording = /^Unrecognized keys?: /;
const unknownFieldMessage = "is not a field of this request";

export interface ErrorBody {
  status: ApplicationCode;
  message: string;
  /** Also in the shape OpenAI-style clients print (C3). */
  error: { message: string; type: string; code: ApplicationCode };
}

const errorTypes: Record<ApplicationCode, string> = {
  100: "invalid_request_error",
  110: "authentication_error",
  120: "not_found_error",
  130: "rate_limit_error",
  140: "spend_limit_error",
  150: "permission_error",
  160: "permission_error",
  300: "model_processing_error",
  400: "insufficient_credit_error",
  401: "insufficient_credit_error",
};

export function errorBodyOf(error: ApiError): ErrorBody {
  // A message may repeat what the client sent (a model, a path): a credential sent there is not repeated.
  const message = withoutCredentials(error.message);
  return {
    status: error.applicationCode,
    message,
    error: { message, type: errorTypes[error.applicationCode], code: error.applicationCode },
  };
}
