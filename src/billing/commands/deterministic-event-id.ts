import { createHash } from "node:crypto";

/**
 * Event ids derived from what an event is about (UUID version 5, RFC 9562 §5.5), so that a retried or
 * duplicated command produces the same id and the event store keeps one event. Use it only where "the
 * same fact" is well defined: the charge of one request, the bank rate for one day, a catalog seed.
 */

/** The namespace of this service's derived event ids (a random UUID, fixed forever: changing it would
 * let a replayed command append a second event). */
const billingEventNamespace = "8f0e3c52-6a1d-4c4b-9e57-2d7b1f6a9c31";

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function bytesOfUuid(uuid: string): Buffer {
  if (!uuidPattern.test(uuid)) throw new RangeError(`not a lower-case UUID: ${uuid}`);
  return Buffer.from(uuid.replaceAll("-", ""), "hex");
}

function uuidOfBytes(bytes: Buffer): string {
  const hex = bytes.toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

/** UUID v5 of `name` in `namespace`: SHA-1 of namespace bytes and name, version and variant bits set. */
export function uuidVersion5(namespace: string, name: string): string {
  const digest = createHash("sha1").update(bytesOfUuid(namespace)).update(name, "utf8").digest();
  const bytes = digest.subarray(0, 16);
  bytes[6] = (bytes[6]! & 0x0f) | 0x50;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  return uuidOfBytes(bytes);
}

/**
 * The top-up an admin client sent under an `Idempotency-Key`: the same key on the same account is the same
 * top-up, however often the client retries it. Joined by a slash, an account and key read as another where
 * both hold one ("alice" + "x/y", "alice/x" + "y"), so an account id with a slash has its own, unambiguous
 * name; every other keeps the name earlier releases derived, which a retry across an upgrade must find.
 */
export function creditToppedUpEventId(accountStreamId: string, idempotencyKey: string): string {
  const name = accountStreamId.includes("/")
    ? `CreditToppedUp/${JSON.stringify([accountStreamId, idempotencyKey])}`
    : `CreditToppedUp/${accountStreamId}/${idempotencyKey}`;
  return uuidVersion5(billingEventNamespace, name);
}

/** The one `UsageCharged` a request may ever have. */
export function usageChargedEventId(requestId: string): string {
  return uuidVersion5(billingEventNamespace, `UsageCharged/${requestId}`);
}

/** The charge of a request's correcting usage (C10: a gateway's settlement after the orphan sweep's). */
export function correctionChargedEventId(requestId: string): string {
  return uuidVersion5(billingEventNamespace, `UsageCharged/correction/${requestId}`);
}

/** The correcting `UsageRecorded` of a request the orphan sweep settled before its gateway could. */
export function usageCorrectionEventId(requestId: string): string {
  return uuidVersion5(billingEventNamespace, `UsageRecorded/correction/${requestId}`);
}

/** One automatic FX rate per (Seoul date, source): a refresh run twice records it once. */
export function fxRateUpdatedEventId(appliesOn: string, source: "koreaexim" | "default"): string {
  return uuidVersion5(billingEventNamespace, `FxRateUpdated/${appliesOn}/${source}`);
}

/** The catalog default price recorded for a model at first start. */
export function modelPriceSeededEventId(model: string): string {
  return uuidVersion5(billingEventNamespace, `ModelPriceSet/seed/${model}`);
}

/** The `UsageRecorded` with which the orphan sweep settles a request's hold: two sweeps settle it once. */
export function orphanSettlementEventId(requestId: string): string {
  return uuidVersion5(billingEventNamespace, `UsageRecorded/orphan/${requestId}`);
}
