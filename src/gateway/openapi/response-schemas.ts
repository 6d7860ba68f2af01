import { z } from "zod";
import { pricingUnavailableReasons } from "../../billing/read-models/pricing-read-model";
import { organizationActions, rolesAllowed } from "../../keys/organization-roles";
import { accountKinds, eventCatalog, fxRateSources, webhookEventTypes } from "../../ledger/events";

/**
 * Shapes of the response bodies, for the API description only: requests are validated by the schemas the
 * routes use, responses are built by code these mirror (interface.md, C3–C6, C11). Money is a decimal string.
 */

/** Money's one form on the API (docs/api.md, "Money"): a plain decimal string, trailing zeros trimmed. */
export const moneyText = z
  .string()
  .regex(/^-?(0|[1-9]\d*)(\.\d*[1-9])?$/)
  .meta({
    description: "decimal string, exact, no exponent, no trailing zeros after the point",
    example: "997.1377",
  });
const instant = z.iso.datetime({ offset: true });
const isoDate = z.iso.date();

export const errorBodySchema = z
  .object({
    status: z
      .number()
      .int()
      .meta({ description: "application code: 100, 110, 120, 130, 140, 150, 160, 300, 400 or 401" }),
    message: z.string(),
    error: z.object({ message: z.string(), type: z.string(), code: z.number().int() }),
  })
  .meta({ title: "ErrorBody" });

const usageOfChat = z.object({
  prompt_tokens: z.number().int(),
  completion_tokens: z.number().int(),
  total_tokens: z.number().int(),
});

export const chatCompletionSchema = z
  .object({
    id: z.string().meta({ example: "chatcmpl-1767225600000" }),
    object: z.literal("chat.completion"),
    created: z.number().int(),
    model: z.string(),
    choices: z.array(
      z.object({
        index: z.number().int(),
        message: z.object({
          role: z.literal("assistant"),
          // Null when the reply is only tool calls, or a refusal.
          content: z.string().nullable(),
          refusal: z
            .string()
            .optional()
            .meta({ description: "the model's words when it declined to answer" }),
          tool_calls: z
            .array(
              z.object({
                id: z.string(),
                type: z.literal("function"),
                function: z.object({ name: z.string(), arguments: z.string() }),
              }),
            )
            .optional(),
        }),
        finish_reason: z.string(),
      }),
    ),
    usage: usageOfChat,
  })
  .meta({ title: "ChatCompletion" });

const outputTextPart = z.object({
  type: z.literal("output_text"),
  text: z.string(),
  annotations: z.array(z.unknown()),
});

const refusalPart = z.object({
  type: z.literal("refusal"),
  refusal: z.string().meta({ description: "the model's words when it declined to answer" }),
});

export const responseSchema = z
  .object({
    id: z.string().meta({ example: "resp-1767225600000" }),
    object: z.literal("response"),
    created_at: z.number().int(),
    status: z.enum(["completed", "incomplete"]),
    error: z.null(),
    incomplete_details: z
      .object({ reason: z.enum(["max_output_tokens", "content_filter"]) })
      .nullable()
      .meta({ description: "why the text was cut short, when status is incomplete" }),
    model: z.string(),
    output_text: z.string(),
    // The message (absent when the reply is only function calls), then one item per function call.
    output: z.array(
      z.union([
        z.object({
          id: z.string(),
          type: z.literal("message"),
          status: z.string(),
          role: z.literal("assistant"),
          content: z.array(z.union([outputTextPart, refusalPart])),
        }),
        z.object({
          type: z.literal("function_call"),
          id: z.string().meta({ example: "resp-1767225600000-fc0" }),
          call_id: z.string(),
          name: z.string(),
          arguments: z.string(),
          status: z.string(),
        }),
      ]),
    ),
    usage: z.object({
      input_tokens: z.number().int(),
      input_tokens_details: z.object({ cached_tokens: z.number().int() }),
      output_tokens: z.number().int(),
      output_tokens_details: z.object({ reasoning_tokens: z.number().int() }),
      total_tokens: z.number().int(),
    }),
  })
  .meta({ title: "Response" });

const modelPricingSchema = z
  .object({
    inputWonPerMillionTokens: moneyText,
    cachedInputWonPerMillionTokens: moneyText,
    outputWonPerMillionTokens: moneyText,
    inputUsdPerMillionTokens: moneyText,
    cachedInputUsdPerMillionTokens: moneyText,
    outputUsdPerMillionTokens: moneyText,
    fxRateKrwPerUsd: moneyText,
    fxRateDate: isoDate,
    discountRate: moneyText.meta({ description: '"0.15" is 15% off' }),
  })
  .nullable()
  .meta({
    title: "ModelPricing",
    description:
      "The caller's price today: USD price × today's FX rate × (1 − the caller's discount), half-up to micro-won; null when it cannot be priced now",
  });

export const modelSchema = z
  .object({
    id: z.string(),
    object: z.literal("model"),
    created: z.number().int(),
    owned_by: z.string(),
    pricing: modelPricingSchema,
  })
  .meta({ title: "Model" });

export const modelListSchema = z.object({ object: z.literal("list"), data: z.array(modelSchema) });

const keyRecord = z.object({
  uuid: z.uuid(),
  name: z.string(),
  description: z.string(),
  isOrganization: z.boolean(),
  status: z.union([z.literal(0), z.literal(1)]),
  createdAt: instant,
});

/** A key's limits (null: none) and its spend (held + pending + charged) as the limits count it. */
const keyLimitsFields = {
  limits: z
    .object({
      monthlySpendLimitWon: moneyText.nullable().meta({ description: "per Asia/Seoul calendar month" }),
      totalSpendLimitWon: moneyText.nullable(),
      rateLimitRequestsPerMinute: z.number().int().nullable(),
      allowedModels: z
        .array(z.string())
        .nullable()
        .meta({
          description: "the model slugs and family words the key may call; null: every model",
          example: ["alpha-5.4-mini", "beta"],
        }),
    })
    .meta({ title: "KeyLimits" }),
  spend: z
    .object({
      month: z.string().meta({ example: "2026-11", description: "the Asia/Seoul month of monthWon" }),
      monthWon: moneyText,
      totalWon: moneyText,
    })
    .meta({ title: "KeySpend" }),
};
export const keyLimitsSchema = z.object({ uuid: z.uuid(), ...keyLimitsFields });

/** What an organization's keys issued from now on start with. */
export const organizationKeyDefaultsSchema = z
  .object({
    organizationId: z.string(),
    allowedModels: z
      .array(z.string())
      .nullable()
      .meta({ description: "the model slugs and family words its new keys may call; null: every model" }),
  })
  .meta({ title: "OrganizationKeyDefaults" });

const organizationRole = z.enum(["owner", "admin", "member"]);

export const organizationMemberSchema = z
  .object({
    userId: z.string(),
    role: organizationRole,
    memberSince: z.string().meta({ description: "when the organization first saw the member (ISO 8601)" }),
  })
  .meta({ title: "OrganizationMember" });

export const organizationMembersSchema = z
  .object({
    organizationId: z.string(),
    you: z
      .object({
        userId: z.string(),
        role: organizationRole,
        actions: z.array(z.enum(organizationActions)).meta({
          description: `what the session's role may do; who may do what: ${organizationActions
            .map((action) => `${action} (${rolesAllowed[action].join(", ")})`)
            .join("; ")}`,
        }),
      })
      .meta({ description: "the session's own role (a provider's role claim, when configured, wins)" }),
    data: z.array(organizationMemberSchema),
  })
  .meta({ title: "OrganizationMembers" });

export const keyListSchema = z.object({
  data: z.array(
    keyRecord.extend({ keyPreview: z.string().meta({ example: "svc_AbCd…wXyZ" }), ...keyLimitsFields }),
  ),
});
export const issuedKeySchema = keyRecord.extend({
  key: z.string().meta({ description: "the full key, shown only in this response" }),
});
export const playgroundKeySchema = issuedKeySchema.extend({ baseUrl: z.literal("/llm/v1") });
export const keyStatusSchema = z.object({ uuid: z.uuid(), status: z.union([z.literal(0), z.literal(1)]) });
export const keyDeletedSchema = z.object({ uuid: z.uuid(), deleted: z.literal(true) });

const accountFunds = z
  .object({
    id: z.string(),
    balanceWon: moneyText,
    heldWon: moneyText.meta({ description: "held by requests in flight (C10)" }),
    pendingWon: moneyText.meta({ description: "usage recorded, not charged yet" }),
  })
  .meta({ title: "AccountFunds" });
export const balanceSchema = z.object({ user: accountFunds, organization: accountFunds.nullable() });

const accountReference = z.object({ kind: z.enum(accountKinds), id: z.string() });

export const chargeSchema = z
  .object({
    requestId: z.string(),
    account: accountReference,
    keyId: z.uuid(),
    keyName: z.string().nullable().meta({
      description: "the key's name, kept after it is deleted; null for a key the ledger never issued",
    }),
    model: z.string(),
    endpoint: z.string(),
    startedAt: instant,
    chargedAt: instant,
    amountWon: moneyText,
    breakdown: eventCatalog.UsageCharged.data.shape.breakdown,
  })
  .meta({ title: "Charge" });

export const billingHistorySchema = z.object({
  account: accountReference,
  from: instant.nullable(),
  to: instant.nullable(),
  data: z.array(chargeSchema),
});

export const billingPageSchema = billingHistorySchema.extend({
  nextCursor: z.string().nullable().meta({ description: "pass back as `cursor`; null on the last page" }),
});

export const billingTotalsSchema = z.object({
  account: accountReference,
  from: instant.nullable(),
  to: instant.nullable(),
  groupBy: z.enum(["day", "model", "key"]),
  totals: z.array(
    z.object({
      group: z.string().meta({ description: "Seoul date, model slug or key uuid" }),
      charges: z.number().int(),
      amountWon: moneyText,
    }),
  ),
  charges: z.number().int(),
  amountWon: moneyText,
});

export const usageByDaySchema = z.object({
  account: accountReference,
  from: isoDate.nullable(),
  to: isoDate.nullable(),
  data: z.array(
    z.object({
      day: isoDate.meta({ description: "a Seoul day" }),
      model: z.string(),
      keyId: z.uuid(),
      keyName: z.string().nullable(),
      requests: z.number().int(),
      amountWon: moneyText,
      inputTokens: z.number().int(),
      cachedTokens: z.number().int(),
      outputTokens: z.number().int(),
      reasoningTokens: z.number().int(),
    }),
  ),
});

export const consolePricesSchema = z.object({
  data: z.array(
    z.object({
      model: z.string(),
      family: z.string(),
      inputUsdPer1M: moneyText,
      outputUsdPer1M: moneyText,
      cachedInputUsdPer1M: moneyText,
      effectiveAt: instant.nullable(),
    }),
  ),
});

export const consoleDiscountsSchema = z.object({
  data: z.array(
    z.object({
      model: z.string().nullable(),
      organizationId: z.string().nullable(),
      rate: z.string(),
      effectiveAt: instant,
    }),
  ),
});

export const pricesSchema = z.object({
  data: z.array(
    z.object({
      model: z.string(),
      family: z.string(),
      protocol: z.string(),
      ignoredParameters: z.array(z.string()),
      inputUsdPer1M: moneyText,
      outputUsdPer1M: moneyText,
      cachedInputUsdPer1M: moneyText,
      effectiveAt: instant.nullable().meta({ description: "null: the catalog default, never recorded" }),
    }),
  ),
});

export const discountsSchema = z.object({
  data: z.array(
    z.object({
      model: z.string().nullable(),
      organizationId: z.string().nullable(),
      rate: moneyText,
      effectiveAt: instant,
    }),
  ),
});

/** The histories page by the place of the last change served, so a change made meanwhile shifts no page. */
const historyNextCursor = z.string().nullable().meta({
  description:
    "pass back as `cursor` for the older changes; null on the last page. A change made between two pages repeats or hides none: it is served in its place, or, when that is among the pages read (a change made now is newer), on the next read from the first page",
});

const changeAuthor = {
  actor: z.string().meta({ description: "who made the change: admin, admin:<label>, system:<component>" }),
  correlationId: z.string().nullable().meta({ description: "the request (x-request-id) that made it" }),
  eventId: z.uuid(),
  effectiveAt: instant,
};

export const priceHistorySchema = z.object({
  data: z.array(
    z.object({
      ...changeAuthor,
      model: z.string(),
      inputUsdPer1M: moneyText,
      outputUsdPer1M: moneyText,
      cachedInputUsdPer1M: moneyText,
    }),
  ),
  nextCursor: historyNextCursor,
});

export const discountHistorySchema = z.object({
  data: z.array(
    z.object({
      ...changeAuthor,
      model: z.string().nullable(),
      organizationId: z.string().nullable(),
      rate: moneyText.nullable().meta({ description: "null: the scope's rule was removed" }),
    }),
  ),
  nextCursor: historyNextCursor,
});

export const accountsPageSchema = z.object({
  data: z.array(
    z.object({
      kind: z.enum(accountKinds),
      id: z.string(),
      balanceWon: moneyText.meta({
        description: "read with heldWon and pendingWon at one instant of the ledger",
      }),
      toppedUpWon: moneyText.meta({
        description: "as the billing history lists it: a charge a moment after balanceWon",
      }),
      chargedWon: moneyText.meta({
        description: "as the billing history lists it: a charge a moment after balanceWon",
      }),
      pendingCharges: z
        .number()
        .int()
        .meta({ description: "usages recorded, not charged yet, as the billing history has them" }),
      heldWon: moneyText.meta({ description: "held by requests in flight" }),
      pendingWon: moneyText.meta({ description: "usage recorded, not charged yet, at its recorded cost" }),
    }),
  ),
  nextCursor: z.string().nullable(),
});

export const accountKeysSchema = z.object({
  data: z.array(
    z.object({
      uuid: z.uuid(),
      name: z.string(),
      description: z.string(),
      status: z.union([z.literal(0), z.literal(1)]),
      keyPreview: z.string(),
      createdAt: instant,
      ...keyLimitsFields,
    }),
  ),
  nextCursor: z.string().nullable().meta({ description: "pass back as `cursor`; null on the last page" }),
});

export const sessionSchema = z.object({ token: z.string(), expiresAt: instant });
export const creditedSchema = z.object({ balanceWon: moneyText });
/** Balance, pending and held read at one instant of the ledger, as `GET /llm/balance` reads them. */
export const accountViewSchema = z.object({
  kind: z.enum(accountKinds),
  id: z.string(),
  balanceWon: moneyText,
  pendingWon: moneyText.meta({ description: "usage recorded, not charged yet, at its recorded cost" }),
  heldWon: moneyText.meta({ description: "held by requests in flight" }),
  unpriceablePending: z
    .array(
      z.object({
        model: z.string(),
        reason: z.enum(pricingUnavailableReasons).meta({
          description:
            "unknown-model: no price of the model at the usage's start; no-fx-rate: no FX rate recorded by then",
        }),
        requests: z.number().int(),
        oldestStartedAt: instant,
      }),
    )
    .meta({
      description:
        "the pending usage nothing prices at its start, per model and reason: counted in pendingWon, not charged until an admin records a price or a rate",
    }),
});
export const modelPriceSchema = z.object({
  model: z.string(),
  inputUsdPer1M: moneyText,
  outputUsdPer1M: moneyText,
  cachedInputUsdPer1M: moneyText,
  effectiveAt: instant,
});
export const discountSchema = z.object({
  model: z.string().nullable(),
  organizationId: z.string().nullable(),
  rate: moneyText,
  effectiveAt: instant,
});
export const discountRemovedSchema = z.object({
  model: z.string().nullable(),
  organizationId: z.string().nullable(),
  rate: z.null(),
  effectiveAt: instant.meta({ description: "from this instant the next less specific rule applies" }),
});
const fxRate = z.object({
  appliesOn: isoDate,
  rateDate: isoDate,
  rate: moneyText,
  source: z.enum(fxRateSources),
  recordedAt: instant,
});
export const fxRateRecordedSchema = fxRate;
export const fxRateRefreshedSchema = z.union([
  fxRate.omit({ recordedAt: true }),
  z.object({ appliesOn: isoDate, alreadyRecorded: z.literal(true) }),
]);
export const fxRateHistorySchema = z.object({
  bankSourceConfigured: z.boolean().meta({
    description: "whether KOREAEXIM_AUTHKEY is set, so POST /admin/fx-rates/refresh can ask the bank",
  }),
  data: z.array(fxRate),
  nextCursor: z.string().nullable().meta({
    description:
      "pass back as `cursor` for the next page; null on the last page. A rate recorded between two pages repeats or hides none: it is served in its place, or, when that is among the pages read (a later day's), on the next read from the first page",
  }),
});
export const eventsPageSchema = z.object({
  order: z.enum(["asc", "desc"]),
  data: z.array(
    z.object({
      position: z.string(),
      eventId: z.uuid(),
      streamId: z.string(),
      streamVersion: z.number().int(),
      type: z.string(),
      data: z.record(z.string(), z.unknown()),
      metadata: z.record(z.string(), z.unknown()),
      recordedAt: instant,
    }),
  ),
  next: z.string().nullable().meta({
    description:
      "newest first: pass as `before` for the next (older) page, null on the last; in log order: pass back as `after`",
  }),
});

export const liveSchema = z.object({ status: z.literal("ok") });
const checkResult = z.looseObject({
  status: z.enum(["ok", "failing"]),
  reason: z.string().optional(),
});
export const readinessSchema = z.object({
  status: z.enum(["ready", "not ready"]),
  failing: z.array(z.enum(["postgresql", "queue", "projections", "process"])),
  checks: z.object({
    postgresql: checkResult,
    queue: checkResult,
    projections: checkResult,
    process: checkResult,
  }),
});

export const upstreamHealthSchema = z.object({
  data: z.array(
    z.object({
      endpoint: z.string().meta({ description: "the endpoint's configured name" }),
      model: z
        .string()
        .meta({ description: "the model slug; each model has its own breaker at each endpoint" }),
      breakerState: z.enum(["closed", "open", "half-open"]),
      outstanding: z.number().int().meta({ description: "requests it serves now" }),
      concurrentRequestsMax: z.number().int().nullable(),
      recentRequests: z
        .number()
        .int()
        .meta({ description: "requests that reached it, in the breaker's current window" }),
      recentFailedRequests: z.number().int().meta({ description: "of those, requests it failed" }),
      recentFailureRate: z.number().nullable(),
    }),
  ),
});

const hex = z.string().regex(/^[0-9a-f]*$/);

export const ledgerStatusSchema = z.object({
  store: z.enum(["postgresql", "eventstoredb"]),
  signingKeyConfigured: z.boolean(),
  latest: z
    .object({
      checkpoint: z.object({
        sequence: z.number().int(),
        last: z.string().meta({ description: "log position of the last event it seals" }),
        eventCount: z.number().int(),
        eventsRoot: hex,
        previousCheckpointHash: hex,
        checkpointHash: hex,
        sealedAt: instant,
        signature: hex,
        publicKey: hex,
      }),
      hashMatches: z.boolean(),
      signatureValid: z
        .boolean()
        .nullable()
        .meta({ description: "null: no LEDGER_SIGNING_KEY here, so the signature is not checked" }),
      chainsToPrevious: z.boolean(),
    })
    .nullable()
    .meta({ description: "null: nothing sealed yet" }),
  unsealedEventCount: z.number().int(),
  unsealedEventCountIsLowerBound: z.boolean(),
});

export const ledgerVerificationSchema = z.union([
  z.object({
    outcome: z.literal("verified"),
    report: z.object({
      problems: z
        .array(z.string())
        .meta({ description: "each broken link, first per stream, the first 100 of them; empty: intact" }),
      problemCount: z
        .number()
        .int()
        .meta({ description: "every broken link found, those beyond the first 100 included" }),
      eventCount: z.number().int(),
      streamCount: z.number().int(),
      checkpointCount: z.number().int(),
      unsealedEventCount: z.number().int(),
      signaturesChecked: z.boolean(),
    }),
    verifiedAt: instant,
    durationMs: z.number().int(),
  }),
  z.object({
    outcome: z.literal("too-large"),
    eventsMax: z.number().int(),
    command: z.string().meta({ description: "run it where the database is: it has no time limit" }),
  }),
  z.object({ outcome: z.literal("unsupported"), store: z.string() }),
]);

export const activityPageSchema = z
  .object({
    data: z.array(
      z.object({
        requestId: z.string(),
        startedAt: instant,
        model: z
          .string()
          .nullable()
          .meta({ description: "the model requested; null when the body could not be read that far" }),
        answeredBy: z.string().nullable().meta({
          description:
            "the model that answered in its place (a configured fallback), which the request was charged as; null when the requested model answered, or none did",
        }),
        keyId: z.uuid(),
        keyPreview: z.string().nullable(),
        endpoint: z.enum(["chat.completions", "responses"]),
        streamed: z.boolean().nullable(),
        httpStatus: z
          .number()
          .int()
          .meta({ description: "as answered; 499 when the client left before any header" }),
        outcome: z.enum(["served", "refused", "failed", "cut"]),
        latencyMs: z.number(),
        timeToFirstTokenMs: z.number().nullable(),
        tokens: z
          .object({
            input: z.number().int(),
            cached: z.number().int().nullable(),
            output: z.number().int(),
            reasoning: z.number().int().nullable(),
          })
          .nullable()
          .meta({ description: "as recorded for billing; null when nothing was produced" }),
        outputTokensPerSecond: z.number().nullable(),
        costWon: moneyText
          .nullable()
          .meta({ description: "the charge; null until charged, or never charged" }),
        errorType: z.string().nullable(),
        responseId: z
          .string()
          .nullable()
          .meta({ description: "the reply body's id (chatcmpl-…, resp-…); null when none was made" }),
      }),
    ),
    nextCursor: z.string().nullable().meta({ description: "pass back as `cursor`; null on the last page" }),
  })
  .meta({ title: "ActivityPage" });

export const signInLinkSchema = z.object({
  path: z.string().meta({ example: "/console/sign-in?code=…" }),
  url: z.string().meta({ description: "the path on the host the request was sent to" }),
  expiresAt: instant,
});

const webhookEventType = z.enum(webhookEventTypes);

export const alertThresholdSchema = z
  .object({
    isOrganization: z.boolean(),
    balanceBelowWon: moneyText
      .nullable()
      .meta({ description: "balance.low is sent when available funds fall below it; null: no threshold" }),
  })
  .meta({ title: "AlertThreshold" });

export const webhookEndpointSchema = z
  .object({
    id: z.string(),
    url: z.string(),
    events: z.array(webhookEventType),
    isOrganization: z.boolean(),
    createdAt: instant,
  })
  .meta({ title: "WebhookEndpoint" });

export const addedWebhookSchema = webhookEndpointSchema
  .extend({
    secret: z.string().meta({
      description: "the signing secret (whsec_…), shown only in this response",
      example: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
    }),
  })
  .meta({ title: "AddedWebhookEndpoint" });

export const rotatedWebhookSecretSchema = z
  .object({
    id: z.string(),
    secret: z.string().meta({
      description:
        "the new signing secret (whsec_…), shown only in this response; the one it replaced still signs beside it for 24 hours",
      example: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
    }),
  })
  .meta({ title: "RotatedWebhookSecret" });

export const webhookListSchema = z.object({ data: z.array(webhookEndpointSchema) });

export const webhookRemovedSchema = z.object({ id: z.string(), deleted: z.literal(true) });

export const webhookDeliveriesSchema = z
  .object({
    data: z.array(
      z.object({
        id: z.string().meta({ description: "the message's webhook-id" }),
        type: z.string(),
        status: z.enum(["pending", "delivered", "failed", "cancelled"]),
        attempts: z.number().int(),
        createdAt: instant,
        nextAttemptAt: instant.nullable().meta({ description: "the next try; null unless pending" }),
        deliveredAt: instant.nullable(),
        lastResponseStatus: z.number().int().nullable(),
        lastError: z.string().nullable(),
      }),
    ),
  })
  .meta({ title: "WebhookDeliveries", description: "the newest first, at most 100" });

export const webhookTestSchema = z.object({
  id: z.string().meta({ description: "the test message's webhook-id" }),
});

/** The account a webhook message is about. */
const webhookAccount = z.object({ kind: z.enum(accountKinds), id: z.string() });

/** The body of each message a webhook endpoint receives, `{ type, timestamp, data }` (OpenAPI `webhooks`). */
function webhookMessageOf<Type extends string>(type: Type, data: z.ZodType, description: string) {
  return z
    .object({
      type: z.literal(type),
      timestamp: instant.meta({
        description: "when the event happened (webhook-timestamp is the attempt's)",
      }),
      data,
    })
    .meta({ description });
}

export const webhookMessageSchemas = {
  "balance.low": webhookMessageOf(
    "balance.low",
    z.object({ account: webhookAccount, availableWon: moneyText, balanceBelowWon: moneyText }),
    "The account's available funds (balance − pending − open holds) fell below its threshold; sent once per crossing",
  ),
  "key.limit_reached": webhookMessageOf(
    "key.limit_reached",
    z.object({
      account: webhookAccount,
      keyId: z.string(),
      keyName: z.string().nullable(),
      limit: z.enum(["rate", "monthly-spend", "total-spend"]),
      limitValue: z.string().meta({ description: "requests per minute, or won" }),
      resetsAt: instant
        .nullable()
        .meta({ description: "when the window ends; null for the total spend limit" }),
    }),
    "A key was refused for one of its limits; at most once per key and window, and again once the limit is set to another value",
  ),
  "statement.closed": webhookMessageOf(
    "statement.closed",
    z.object({ account: webhookAccount, month: z.string(), from: instant, to: instant }),
    "A month's statement became final; once per account and month",
  ),
  "webhook.test": webhookMessageOf(
    "webhook.test",
    z.object({ webhookId: z.string() }),
    "Sent by POST /llm/webhooks/{id}/test",
  ),
} as const;
