import { z } from "zod";
import { isDecimalString } from "../kernel/money";

/**
 * The event catalog: every fact the ledger records, in one place. Events are `{ type, data, metadata }`;
 * each type has a schema version so a stored event's shape never changes — a new shape gets a new version
 * and an upcaster in `upcastEventData`.
 */

const decimalString = z.string().refine(isDecimalString, 'must be a decimal string such as "1234.5"');
const isoInstant = z.iso.datetime({ offset: true });
const isoDate = z.iso.date();
const tokenCount = z.number().int().nonnegative();

export const accountKinds = ["user", "organization"] as const;
export type AccountKind = (typeof accountKinds)[number];
export const accountReference = z.object({ kind: z.enum(accountKinds), id: z.string().min(1) });
export type AccountReference = z.infer<typeof accountReference>;

export const eventMetadata = z.object({
  /** Who caused it: `user:<id>`, `admin`, `key:<uuid>`, `system:<component>`. */
  actor: z.string().min(1),
  /** The HTTP request (`x-request-id`) or job that produced the event. */
  correlationId: z.string().min(1).optional(),
  /** The event that caused this one, when there is one. */
  causationId: z.string().min(1).optional(),
  occurredAt: isoInstant,
  /**
   * For a change an organization role allowed (C14): the version of the organization's stream whose roles
   * were read to allow it. The log orders transactions by their first write, not their commit, so a change
   * decided while a grant was committing can follow that grant in the log; this names what it was decided on.
   */
  organizationVersion: z.number().int().nonnegative().optional(),
});
export type EventMetadata = z.infer<typeof eventMetadata>;

/** What a change's authorization read, recorded in its metadata. */
export type AuthorizationBasis = Pick<EventMetadata, "organizationVersion">;

/** Whether the actor may make a change, asked in the change's turn right before its append: throws when not. */
export type ChangeAuthorization = () => Promise<AuthorizationBasis | undefined>;

const apiKeyIssued = z.object({
  keyId: z.uuid(),
  owner: accountReference,
  /** The personal owner for personal keys; the issuing user for organization keys. */
  issuedByUserId: z.string().min(1),
  name: z.string().min(1),
  description: z.string(),
  /** HMAC-SHA256 of the key value under KEY_PEPPER, hex. The key value itself is never stored. */
  keyHash: z.string().regex(/^[0-9a-f]{64}$/),
  keyPreview: z.string(),
});

const apiKeyStatusChanged = z.object({
  keyId: z.uuid(),
  owner: accountReference,
  status: z.union([z.literal(0), z.literal(1)]),
});

const apiKeyDeleted = z.object({ keyId: z.uuid(), owner: accountReference });

/**
 * The key's limits from now on, all at once (null: none). Spend is the key's held + pending + charged
 * usage, per Asia/Seoul calendar month and in total; the rate counts requests admitted per minute.
 */
const apiKeyLimitsSet = z.object({
  keyId: z.uuid(),
  owner: accountReference,
  monthlySpendLimitWon: decimalString.nullable(),
  totalSpendLimitWon: decimalString.nullable(),
  rateLimitRequestsPerMinute: z.number().int().positive().nullable(),
  /**
   * v2. The models the key may call: model slugs and family words (`alpha` … `zeta`: every model of that
   * family), never empty. Null: every model — and every v1 event, which could not say.
   */
  allowedModels: z.array(z.string().min(1)).min(1).nullish(),
});
export type ApiKeyLimits = Omit<z.infer<typeof apiKeyLimitsSet>, "keyId" | "owner">;

/**
 * What an organization's new keys start with, on its stream `organization-<id>`: the models they may call
 * (slugs and family words, as `ApiKeyLimitsSet`'s), written on each key issued afterwards as its first
 * `ApiKeyLimitsSet`. Null: every model. Keys issued before keep their own.
 */
const organizationKeyDefaultsSet = z.object({
  organizationId: z.string().min(1),
  allowedModels: z.array(z.string().min(1)).min(1).nullable(),
});

/** The roles of an organization's members (C14), from most to least able. */
export const organizationRoles = ["owner", "admin", "member"] as const;
export type OrganizationRole = (typeof organizationRoles)[number];

/**
 * A member's role in an organization from now on, on its stream `organization-<id>`; the actor (metadata)
 * is who granted it, or `system:organization-roles` for the first member an organization sees.
 */
const organizationRoleGranted = z.object({
  organizationId: z.string().min(1),
  userId: z.string().min(1),
  role: z.enum(organizationRoles),
});

/**
 * What the identity provider said a member's role is (C14: a provider's role claim wins), as a sign-in by
 * OpenID Connect read it, on the organization's stream `organization-<id>`; recorded when it differs from the
 * last one recorded. Null: the provider claimed no role of ours. The actor (metadata) is `oidc:<issuer>`.
 * It decides the role of the member's sessions that carry an older claim (docs/api.md).
 */
const organizationRoleClaimed = z.object({
  organizationId: z.string().min(1),
  userId: z.string().min(1),
  role: z.enum(organizationRoles).nullable(),
});

/** The events an endpoint may subscribe to (C14, docs/api.md "Alerts by signed webhooks"). */
export const webhookEventTypes = ["balance.low", "key.limit_reached", "statement.closed"] as const;
export type WebhookEventType = (typeof webhookEventTypes)[number];

/**
 * An account's low-funds alert from now on, on its stream `alerts-<kind>-<id>`: `balance.low` is sent when its
 * available funds fall below `balanceBelowWon`. Null: no alert.
 */
const alertThresholdSet = z.object({
  account: accountReference,
  balanceBelowWon: decimalString.nullable(),
});

/**
 * An account's webhook endpoint, on the stream `webhook-<id>`. The signing secret is not in the log (the log is
 * readable by the admin API and never forgets): it is kept beside the delivery outbox, `webhook_secrets`.
 */
const webhookEndpointAdded = z.object({
  webhookId: z.string().min(1),
  account: accountReference,
  url: z.string().min(1),
  events: z.array(z.enum(webhookEventTypes)).min(1),
});

const webhookEndpointRemoved = z.object({
  webhookId: z.string().min(1),
  account: accountReference,
});

/**
 * The endpoint signs with a new secret from now on, and with the one it replaced beside it for a day, so
 * receivers move to the new one without a gap (docs/api.md). Neither secret is in the log: both are kept in
 * `webhook_secrets`, as the first one is.
 */
const webhookSecretRotated = z.object({
  webhookId: z.string().min(1),
  account: accountReference,
});

const creditToppedUp = z.object({
  account: accountReference,
  amountWon: decimalString,
  reference: z.string(),
});

const modelPriceSet = z.object({
  model: z.string().min(1),
  inputUsdPerMillionTokens: decimalString,
  outputUsdPerMillionTokens: decimalString,
  cachedInputUsdPerMillionTokens: decimalString,
});

const discountSet = z.object({
  /** null: any model. */
  model: z.string().min(1).nullable(),
  /** null: any organization (and personal keys). */
  organizationId: z.string().min(1).nullable(),
  /** null (v2): the scope's rule is removed, and a less specific one applies again. */
  rate: decimalString.nullable(),
});

export const fxRateSources = ["koreaexim", "admin", "default"] as const;
const fxRateUpdated = z.object({
  /** The Seoul date on which requests are priced with this rate. */
  appliesOn: isoDate,
  /** The business day whose published rate this is. */
  rateDate: isoDate,
  rateKrwPerUsd: decimalString,
  source: z.enum(fxRateSources),
});

export const usageSources = ["upstream", "estimated"] as const;
export type UsageSource = (typeof usageSources)[number];
export const generationEndpoints = ["chat.completions", "responses"] as const;
/**
 * `interrupted`: the gateway process serving it died; the usage was settled from its hold and its last
 * progress record (C10). `shutdown`: the gateway cut the stream at its drain bound while stopping.
 * `deadline-exceeded`: the stream ran past the gateway's total stream deadline and was ended by it.
 */
export const usageOutcomes = [
  "completed",
  "client-disconnected",
  "upstream-failed",
  "interrupted",
  "shutdown",
  "deadline-exceeded",
] as const;
export type UsageOutcome = (typeof usageOutcomes)[number];

const usageTokens = z.object({
  input: tokenCount,
  /** null: the upstream did not report it. */
  cached: tokenCount.nullable(),
  output: tokenCount,
  reasoning: tokenCount.nullable(),
});
export type UsageTokens = z.infer<typeof usageTokens>;

/**
 * v3 of `UsageRecorded`, v2 of `UsageVoided`: the upstream attempts the request made (C13), so finance and
 * operators see what happened — endpoint names only, never a URL or key. Null where nothing was recorded:
 * events written before, and settlements by the orphan sweep (which never saw the attempts).
 */
export const upstreamAttemptErrors = [
  /** Could not connect, or the connection was reset or closed before the reply was complete. */
  "connection",
  /** No answer (or no first byte) in time. */
  "timeout",
  /** An answer that does not follow the protocol. */
  "malformed",
  /** A non-2xx HTTP status (`status` says which). */
  "status",
  /** A 200 reply that reported a failure (an error event, a failed response). */
  "reported",
  /** Cut at the request's deadline before any output. */
  "deadline",
  /** The client went away, or its hold was refused, during the attempt. */
  "cancelled",
] as const;
const upstreamAttempt = z.object({
  endpoint: z.string().min(1),
  model: z.string().min(1),
  status: z.number().int().nullable(),
  error: z.enum(upstreamAttemptErrors).nullable(),
  durationMs: z.number().int().nonnegative(),
});
const upstreamAttempts = z.array(upstreamAttempt).max(64).nullish();
export type RecordedUpstreamAttempt = z.infer<typeof upstreamAttempt>;

const usageRecorded = z.object({
  requestId: z.string().min(1),
  keyId: z.uuid(),
  /** The balance this usage is charged to. */
  account: accountReference,
  userId: z.string().min(1).nullable(),
  organizationId: z.string().min(1).nullable(),
  model: z.string().min(1),
  endpoint: z.enum(generationEndpoints),
  streamed: z.boolean(),
  outcome: z.enum(usageOutcomes),
  tokens: usageTokens,
  usageSource: z.enum(usageSources),
  /** Prices, FX rate and discount are those in force at this instant. */
  startedAt: isoInstant,
  /**
   * v2. The hold this usage releases (its `UsageAuthorized.holdWon`); null for a usage recorded without a
   * hold (v1 events).
   */
  heldWon: decimalString.nullish(),
  /** v2. The exact cost, pending until the charge posts; null when it was not priced (v1 events). */
  pendingWon: decimalString.nullish(),
  /**
   * v3. Set when this usage corrects one recorded earlier on the same stream: the orphan sweep settled the
   * request with an estimate before the gateway that served it could record what it delivered (C10). Then
   * `heldWon` is 0 (the estimate released the hold) and `pendingWon` is the difference this record makes to
   * pending: the delivered cost minus the corrected record's `pendingWon` (negative when the estimate was
   * higher). Null for every first record.
   */
  corrects: z
    .object({
      /** The `UsageRecorded` this one corrects. */
      eventId: z.uuid(),
      /** That record's `pendingWon`, so the difference above can be checked from this event alone. */
      pendingWon: decimalString,
    })
    .nullish(),
  /** v3. The attempts that led to this usage; `model` above is the one that answered. */
  attempts: upstreamAttempts,
});

/**
 * The hold placed before any output (C10), first event of the usage stream. `holdWon` was granted against
 * the account's available funds in the same transaction; it is at most what was available then.
 */
const usageAuthorized = z.object({
  requestId: z.string().min(1),
  keyId: z.uuid(),
  account: accountReference,
  userId: z.string().min(1).nullable(),
  organizationId: z.string().min(1).nullable(),
  model: z.string().min(1),
  endpoint: z.enum(generationEndpoints),
  streamed: z.boolean(),
  startedAt: isoInstant,
  holdWon: decimalString,
  /** What the hold was priced from: upper bounds, not counts. */
  estimate: z.object({
    inputTokensMax: tokenCount,
    outputTokensMax: tokenCount,
    /** The estimate's cost; the hold is this, or what was available when that was less. */
    estimatedWon: decimalString,
  }),
  /** The gateway process serving the request: its death makes the hold an orphan to settle. */
  gatewayInstance: z.string().min(1),
  /** Settled as interrupted after this instant even if its process still lives. */
  expiresAt: isoInstant,
});

export const voidReasons = [
  "client-disconnected",
  "upstream-failed",
  "ledger-unavailable",
  "shutdown",
  "deadline-exceeded",
] as const;
/** The hold of a request that produced nothing, released whole. */
const usageVoided = z.object({
  requestId: z.string().min(1),
  account: accountReference,
  releasedWon: decimalString,
  reason: z.enum(voidReasons),
  /** v2. The attempts that produced nothing; null for v1 events and the orphan sweep. */
  attempts: upstreamAttempts,
});

const chargeBreakdown = z.object({
  tokens: usageTokens,
  inputUsdPerMillionTokens: decimalString,
  cachedInputUsdPerMillionTokens: decimalString,
  outputUsdPerMillionTokens: decimalString,
  usd: decimalString,
  fxRateKrwPerUsd: decimalString,
  fxRateDate: isoDate,
  discountRate: decimalString,
  amountWon: decimalString,
  usageSource: z.enum(usageSources),
});
export type ChargeBreakdownData = z.infer<typeof chargeBreakdown>;

const usageCharged = z.object({
  requestId: z.string().min(1),
  keyId: z.uuid(),
  account: accountReference,
  model: z.string().min(1),
  endpoint: z.enum(generationEndpoints),
  startedAt: isoInstant,
  amountWon: decimalString,
  breakdown: chargeBreakdown,
  /** v2. The pending amount this charge releases (its usage's `pendingWon`); null for v1 events. */
  releasedPendingWon: decimalString.nullish(),
  /**
   * v3. Set on the charge of a correcting usage (`UsageRecorded.corrects`). `breakdown` is then the
   * delivered usage's whole charge, and `amountWon` what this event adds to the request's charge:
   * `breakdown.amountWon − correctedAmountWon`, negative when the estimate charged more. Every other charge
   * has `amountWon = breakdown.amountWon`. Null for every first charge.
   */
  correction: z
    .object({
      /** The `UsageCharged` of the corrected usage. */
      correctsEventId: z.uuid(),
      /** Its amount: the request's charge before this correction. */
      correctedAmountWon: decimalString,
      /** Its token counts, so sums of tokens (usage by day) can move by the difference. */
      correctedTokens: usageTokens,
    })
    .nullish(),
});

export const eventCatalog = {
  ApiKeyIssued: { schemaVersion: 1, data: apiKeyIssued },
  ApiKeyStatusChanged: { schemaVersion: 1, data: apiKeyStatusChanged },
  ApiKeyDeleted: { schemaVersion: 1, data: apiKeyDeleted },
  ApiKeyLimitsSet: { schemaVersion: 2, data: apiKeyLimitsSet },
  OrganizationKeyDefaultsSet: { schemaVersion: 1, data: organizationKeyDefaultsSet },
  OrganizationRoleGranted: { schemaVersion: 1, data: organizationRoleGranted },
  OrganizationRoleClaimed: { schemaVersion: 1, data: organizationRoleClaimed },
  AlertThresholdSet: { schemaVersion: 1, data: alertThresholdSet },
  WebhookEndpointAdded: { schemaVersion: 1, data: webhookEndpointAdded },
  WebhookEndpointRemoved: { schemaVersion: 1, data: webhookEndpointRemoved },
  WebhookSecretRotated: { schemaVersion: 1, data: webhookSecretRotated },
  CreditToppedUp: { schemaVersion: 1, data: creditToppedUp },
  ModelPriceSet: { schemaVersion: 1, data: modelPriceSet },
  DiscountSet: { schemaVersion: 2, data: discountSet },
  FxRateUpdated: { schemaVersion: 1, data: fxRateUpdated },
  UsageAuthorized: { schemaVersion: 1, data: usageAuthorized },
  UsageRecorded: { schemaVersion: 3, data: usageRecorded },
  UsageVoided: { schemaVersion: 2, data: usageVoided },
  UsageCharged: { schemaVersion: 3, data: usageCharged },
} as const;

type Catalog = typeof eventCatalog;
export type LedgerEventType = keyof Catalog;
export const ledgerEventTypes = Object.keys(eventCatalog) as LedgerEventType[];

export type EventData<T extends LedgerEventType> = z.infer<Catalog[T]["data"]>;

/** A ledger event as the domain sees it: a discriminated union on `type`. */
export type LedgerEvent = {
  [T in LedgerEventType]: { type: T; data: EventData<T>; metadata: EventMetadata };
}[LedgerEventType];

export type LedgerEventOf<T extends LedgerEventType> = Extract<LedgerEvent, { type: T }>;

export function isLedgerEventType(type: string): type is LedgerEventType {
  return Object.hasOwn(eventCatalog, type);
}

/** Validates an event before it is appended: the store never holds a shape the catalog does not know. */
export function parseLedgerEvent(event: { type: string; data: unknown; metadata: unknown }): LedgerEvent {
  if (!isLedgerEventType(event.type)) throw new TypeError(`unknown event type ${event.type}`);
  const definition = eventCatalog[event.type];
  return {
    type: event.type,
    data: definition.data.parse(event.data),
    metadata: eventMetadata.parse(event.metadata),
  } as LedgerEvent;
}

export function schemaVersionOf(type: LedgerEventType): number {
  return eventCatalog[type].schemaVersion;
}

/**
 * The version an event is stored as: its type's, except where an earlier version says the same. A discount
 * rule with a rate is what `DiscountSet` v1 said, so it is written as v1, which an earlier release reads
 * during a rollout; only a removal (rate null) needs v2.
 */
export function writtenSchemaVersionOf(event: LedgerEvent): number {
  if (event.type === "DiscountSet" && event.data.rate !== null) return 1;
  return schemaVersionOf(event.type);
}

/**
 * Brings data stored under an older schema version to the current shape, and refuses data written by a
 * newer release than this one. v2 of `UsageRecorded` and `UsageCharged` added the money the usage moves
 * between held, pending and balance (C10); v1 events moved none of it, which null says. v3 of
 * `UsageRecorded` and `UsageCharged` added corrections (`corrects`, `correction`: no earlier event is one),
 * and with v2 of `UsageVoided` the upstream attempts (`attempts`: older events recorded none). v2 of
 * `ApiKeyLimitsSet` added the models a key may call (`allowedModels`: a v1 key could call every model), and v2
 * of `DiscountSet` a removed rule (`rate` null: a v1 event always set one, so it reads unchanged).
 */
export function upcastEventData(type: LedgerEventType, schemaVersion: number, data: unknown): unknown {
  const current = schemaVersionOf(type);
  if (schemaVersion === current) return data;
  if (schemaVersion === 1 && type === "UsageRecorded")
    return { heldWon: null, pendingWon: null, corrects: null, attempts: null, ...(data as object) };
  if (schemaVersion === 2 && type === "UsageRecorded")
    return { corrects: null, attempts: null, ...(data as object) };
  if (schemaVersion === 1 && type === "UsageVoided") return { attempts: null, ...(data as object) };
  if (schemaVersion === 1 && type === "UsageCharged")
    return { releasedPendingWon: null, correction: null, ...(data as object) };
  if (schemaVersion === 2 && type === "UsageCharged") return { correction: null, ...(data as object) };
  if (schemaVersion === 1 && type === "ApiKeyLimitsSet") return { allowedModels: null, ...(data as object) };
  if (schemaVersion === 1 && type === "DiscountSet") return data;
  throw new Error(`${type} v${schemaVersion} cannot be read by this release (knows v${current})`);
}

/** An account as one string, `kind:id` (the kind has no colon, so the first one separates them). */
export function accountNameOf(account: AccountReference): string {
  return `${account.kind}:${account.id}`;
}

/**
 * The account whose keys or funds the event changes, if any: a key's owner (its keys), the account a top-up
 * credits, the paying account of a hold, a usage, a void or a charge (its funds). Prices, discounts and FX
 * rates belong to no account: they change no stored key or balance, only what later requests will cost; an
 * organization's key defaults likewise change no key, only what later keys start with, and a role changes
 * who may manage them, not the keys.
 * Local copies of per-account data re-read only the accounts a projection batch touched, so an event type
 * added here without its account would leave those copies stale: the switch makes that a compile error.
 */
export function accountTouchedBy(event: LedgerEvent): AccountReference | undefined {
  switch (event.type) {
    case "ApiKeyIssued":
    case "ApiKeyStatusChanged":
    case "ApiKeyDeleted":
    case "ApiKeyLimitsSet":
      return event.data.owner;
    case "CreditToppedUp":
    case "UsageAuthorized":
    case "UsageRecorded":
    case "UsageVoided":
    case "UsageCharged":
      return event.data.account;
    case "ModelPriceSet":
    case "DiscountSet":
    case "FxRateUpdated":
    case "OrganizationKeyDefaultsSet":
    case "OrganizationRoleGranted":
    case "OrganizationRoleClaimed":
    case "AlertThresholdSet":
    case "WebhookEndpointAdded":
    case "WebhookEndpointRemoved":
    case "WebhookSecretRotated":
      return undefined;
    default: {
      const unknown: never = event;
      throw new Error(`unknown event ${JSON.stringify(unknown)}`);
    }
  }
}

/**
 * Where each event type names the account it touches (`accountTouchedBy`): the data field holding it, or null.
 * The PostgreSQL log reads an event's head by it (postgres-event-store.ts), without reading the rest of
 * the event; a test holds it to `accountTouchedBy` for every type.
 */
export const accountFieldOf: Record<LedgerEventType, "owner" | "account" | null> = {
  ApiKeyIssued: "owner",
  ApiKeyStatusChanged: "owner",
  ApiKeyDeleted: "owner",
  ApiKeyLimitsSet: "owner",
  OrganizationKeyDefaultsSet: null,
  OrganizationRoleGranted: null,
  OrganizationRoleClaimed: null,
  AlertThresholdSet: null,
  WebhookEndpointAdded: null,
  WebhookEndpointRemoved: null,
  WebhookSecretRotated: null,
  CreditToppedUp: "account",
  UsageAuthorized: "account",
  UsageRecorded: "account",
  UsageVoided: "account",
  UsageCharged: "account",
  ModelPriceSet: null,
  DiscountSet: null,
  FxRateUpdated: null,
};

/**
 * What a local copy needs to know of an event to tell what it changed: its type and the account it touched
 * (`accountTouchedBy`). The projection runner reads only this of each event where it folds in SQL.
 */
export interface EventHead {
  type: LedgerEventType;
  account: AccountReference | undefined;
}

export function headOf(event: LedgerEvent): EventHead {
  return { type: event.type, account: accountTouchedBy(event) };
}

/** The names (`accountNameOf`) of the accounts a batch of events touched, each once. */
export function accountsTouchedBy(heads: readonly EventHead[]): Set<string> {
  const names = new Set<string>();
  for (const { account } of heads) if (account) names.add(accountNameOf(account));
  return names;
}

/**
 * Whether an event only moves its account's money: its keys (issued, status, owner, limits) are as they
 * were. A record table, so a new event type must say.
 */
const movesOnlyMoney: Record<LedgerEventType, boolean> = {
  ApiKeyIssued: false,
  ApiKeyStatusChanged: false,
  ApiKeyDeleted: false,
  ApiKeyLimitsSet: false,
  OrganizationKeyDefaultsSet: false,
  OrganizationRoleGranted: false,
  OrganizationRoleClaimed: false,
  AlertThresholdSet: false,
  WebhookEndpointAdded: false,
  WebhookEndpointRemoved: false,
  WebhookSecretRotated: false,
  CreditToppedUp: true,
  UsageAuthorized: true,
  UsageRecorded: true,
  UsageVoided: true,
  UsageCharged: true,
  ModelPriceSet: false,
  DiscountSet: false,
  FxRateUpdated: false,
};

/**
 * Of the accounts a batch touched (`accountsTouchedBy`), those whose keys it may have changed: touched by
 * any event but a movement of money. Of the others only the funds moved, so a copy of their keys needs only
 * their funds read again.
 */
export function accountsWithKeysChangedBy(heads: readonly EventHead[]): Set<string> {
  const names = new Set<string>();
  for (const { type, account } of heads) {
    if (!movesOnlyMoney[type] && account) names.add(accountNameOf(account));
  }
  return names;
}

/** The events that change what a request is priced with (C7): a price, a discount, an FX rate. */
const pricingEventTypes: ReadonlySet<string> = new Set<LedgerEventType>([
  "ModelPriceSet",
  "DiscountSet",
  "FxRateUpdated",
]);

/** Whether a batch may change what requests are priced with: a process keeps its pricing copy otherwise. */
export function pricingChangedBy(heads: readonly EventHead[]): boolean {
  return heads.some(({ type }) => pricingEventTypes.has(type));
}

/** An event before it is stamped with metadata (what a decision produces). */
export type UnstampedLedgerEvent = LedgerEvent extends infer Event
  ? Event extends LedgerEvent
    ? Omit<Event, "metadata">
    : never
  : never;
