import { z } from "zod";
import { isDecimalString } from "../billing/money";

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
});
export type EventMetadata = z.infer<typeof eventMetadata>;

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
  rate: decimalString,
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
export const usageOutcomes = ["completed", "client-disconnected", "upstream-failed"] as const;

const usageTokens = z.object({
  input: tokenCount,
  /** null: the upstream did not report it. */
  cached: tokenCount.nullable(),
  output: tokenCount,
  reasoning: tokenCount.nullable(),
});
export type UsageTokens = z.infer<typeof usageTokens>;

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
});

export const eventCatalog = {
  ApiKeyIssued: { schemaVersion: 1, data: apiKeyIssued },
  ApiKeyStatusChanged: { schemaVersion: 1, data: apiKeyStatusChanged },
  ApiKeyDeleted: { schemaVersion: 1, data: apiKeyDeleted },
  CreditToppedUp: { schemaVersion: 1, data: creditToppedUp },
  ModelPriceSet: { schemaVersion: 1, data: modelPriceSet },
  DiscountSet: { schemaVersion: 1, data: discountSet },
  FxRateUpdated: { schemaVersion: 1, data: fxRateUpdated },
  UsageRecorded: { schemaVersion: 1, data: usageRecorded },
  UsageCharged: { schemaVersion: 1, data: usageCharged },
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
 * Brings data stored under an older schema version to the current shape. Every type is at version 1, so
 * this only guards against data written by a newer release than this one.
 */
export function upcastEventData(type: LedgerEventType, schemaVersion: number, data: unknown): unknown {
  const current = schemaVersionOf(type);
  if (schemaVersion !== current) {
    throw new Error(`${type} v${schemaVersion} cannot be read by this release (knows v${current})`);
  }
  return data;
}

/** An event before it is stamped with metadata (what a decision produces). */
export type UnstampedLedgerEvent = LedgerEvent extends infer Event
  ? Event extends LedgerEvent
    ? Omit<Event, "metadata">
    : never
  : never;
