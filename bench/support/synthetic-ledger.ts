import { createHash } from "node:crypto";
import type { EventMetadata, LedgerEvent } from "../../src/ledger/events";
import type { EventStore, StreamAppend } from "../../src/ledger/store/event-store";
import { mulberry32 } from "../../src/providers/simulator/simulated-completion";

/**
 * A deterministic, realistic ledger for rebuild/verify tests and benchmarks: users and organizations top
 * up, keys are issued, toggled and deleted, prices, discounts and FX rates change, and most events are
 * usage recorded then charged — mostly in the same append, some charged by a later one (as the worker
 * does when it falls behind), the last few never, and some with token counts the upstream did not report.
 * Same seed, same events.
 */

export interface SyntheticLedgerOptions {
  eventCount: number;
  seed: number;
  userCount?: number;
  organizationCount?: number;
  /** Appends per store call. */
  batchSize?: number;
}

export async function appendSyntheticLedger(
  store: EventStore,
  options: SyntheticLedgerOptions,
): Promise<number> {
  let appended = 0;
  let batch: StreamAppend[] = [];
  for (const append of syntheticAppends(options)) {
    batch.push(append);
    if (batch.length >= (options.batchSize ?? 500)) {
      appended += await flush(store, batch);
      batch = [];
    }
  }
  return appended + (await flush(store, batch));
}

async function flush(store: EventStore, batch: StreamAppend[]): Promise<number> {
  if (batch.length === 0) return 0;
  const outcomes = await store.appendBatch(batch);
  const failed = outcomes.find((outcome) => outcome.status === "rejected");
  if (failed) throw (failed as PromiseRejectedResult).reason;
  return batch.reduce((count, append) => count + append.events.length, 0);
}

type Owner = { kind: "user" | "organization"; id: string };

const syntheticModels = ["alpha-5.4-mini", "beta-3-flash", "delta-4.6-sonnet", "gamma-4-5"];

/**
 * The generator's state: its random sequence, the keys alive, the usage not charged yet, each stream's
 * version. Every draw goes through `random` in a fixed order, which is what keeps a seed's events the same.
 */
class SyntheticLedger {
  readonly random: () => number;
  readonly users: number;
  readonly organizations: number;
  readonly clock = Date.parse("2026-10-01T00:00:00Z");
  readonly keys: { keyId: string; owner: Owner }[] = [];
  /** Usage recorded and not charged yet: its stream and its charge. */
  readonly uncharged: { streamId: string; charge: LedgerEvent }[] = [];
  readonly versions = new Map<string, number>();
  produced = 0;
  sequence = 0;

  constructor(readonly options: SyntheticLedgerOptions) {
    this.random = seededRandom(options.seed);
    this.users = options.userCount ?? 500;
    this.organizations = options.organizationCount ?? 50;
  }

  id(label: string): string {
    return deterministicUuid(`${this.options.seed}:${label}:${this.sequence++}`);
  }

  /** The current instant: one second per id drawn so far. */
  now(): string {
    return new Date(this.clock + this.sequence * 1_000).toISOString();
  }

  metadata(actor: string): EventMetadata {
    return { actor, occurredAt: this.now() };
  }

  append(streamId: string, events: LedgerEvent[]): StreamAppend {
    const version = this.versions.get(streamId);
    this.versions.set(streamId, (version ?? -1) + events.length);
    this.produced += events.length;
    return {
      streamId,
      expectedVersion: version === undefined ? "no-stream" : version,
      events: events.map((event) => ({ eventId: this.id("event"), event })),
    };
  }

  account(): Owner {
    return this.random() < 0.7
      ? { kind: "user", id: `user-${Math.floor(this.random() * this.users)}` }
      : { kind: "organization", id: `org-${Math.floor(this.random() * this.organizations)}` };
  }

  model(): string {
    return syntheticModels[Math.floor(this.random() * syntheticModels.length)]!;
  }

  key(): { keyId: string; owner: Owner } {
    return this.keys[Math.floor(this.random() * this.keys.length)]!;
  }
}

export function* syntheticAppends(options: SyntheticLedgerOptions): Generator<StreamAppend> {
  const ledger = new SyntheticLedger(options);
  while (ledger.produced < options.eventCount) {
    if (ledger.uncharged.length > 0 && ledger.random() < 0.2) {
      const { streamId, charge } = ledger.uncharged.shift()!;
      yield ledger.append(streamId, [{ ...charge, metadata: ledger.metadata("system:reconciler") }]);
      continue;
    }
    yield nextAppend(ledger, ledger.random());
  }
}

/** What `roll` picks: mostly usage, then top-ups, then keys, prices, discounts and FX rates. */
function nextAppend(ledger: SyntheticLedger, roll: number): StreamAppend {
  if (roll < 0.08 || ledger.keys.length === 0) return keyIssued(ledger);
  if (roll < 0.098) return keyStatusChanged(ledger);
  if (roll < 0.1) return keyDeleted(ledger);
  if (roll < 0.2) return creditToppedUp(ledger);
  if (roll < 0.205) return modelPriceSet(ledger);
  if (roll < 0.21) return discountSet(ledger);
  if (roll < 0.215) return fxRateUpdated(ledger);
  return usage(ledger);
}

function keyIssued(ledger: SyntheticLedger): StreamAppend {
  const owner = ledger.account();
  const keyId = ledger.id("key");
  ledger.keys.push({ keyId, owner });
  return ledger.append(`apikey-${keyId}`, [
    {
      type: "ApiKeyIssued",
      data: {
        keyId,
        owner,
        issuedByUserId: owner.kind === "user" ? owner.id : "user-0",
        name: `key ${ledger.keys.length}`,
        description: "",
        keyHash: createHash("sha256").update(keyId).digest("hex"),
        keyPreview: "svc_abcd…wxyz",
      },
      metadata: ledger.metadata(`user:${owner.id}`),
    },
  ]);
}

function keyStatusChanged(ledger: SyntheticLedger): StreamAppend {
  const key = ledger.key();
  return ledger.append(`apikey-${key.keyId}`, [
    {
      type: "ApiKeyStatusChanged",
      data: { keyId: key.keyId, owner: key.owner, status: ledger.random() < 0.5 ? 0 : 1 },
      metadata: ledger.metadata("user:someone"),
    },
  ]);
}

function keyDeleted(ledger: SyntheticLedger): StreamAppend {
  const key = ledger.keys.splice(Math.floor(ledger.random() * ledger.keys.length), 1)[0]!;
  return ledger.append(`apikey-${key.keyId}`, [
    {
      type: "ApiKeyDeleted",
      data: { keyId: key.keyId, owner: key.owner },
      metadata: ledger.metadata("user:someone"),
    },
  ]);
}

function creditToppedUp(ledger: SyntheticLedger): StreamAppend {
  const target = ledger.account();
  return ledger.append(`account-${target.kind}-${target.id}`, [
    {
      type: "CreditToppedUp",
      data: {
        account: target,
        amountWon: `${Math.floor(ledger.random() * 100_000)}.${Math.floor(ledger.random() * 100)}`,
        reference: "synthetic",
      },
      metadata: ledger.metadata("admin"),
    },
  ]);
}

function modelPriceSet(ledger: SyntheticLedger): StreamAppend {
  const model = ledger.model();
  return ledger.append(`model-price-${model}`, [
    {
      type: "ModelPriceSet",
      data: {
        model,
        inputUsdPerMillionTokens: (ledger.random() * 10).toFixed(3),
        outputUsdPerMillionTokens: (ledger.random() * 40).toFixed(3),
        cachedInputUsdPerMillionTokens: (ledger.random() * 1).toFixed(3),
      },
      metadata: ledger.metadata("admin"),
    },
  ]);
}

function discountSet(ledger: SyntheticLedger): StreamAppend {
  const model = ledger.random() < 0.5 ? null : ledger.model();
  const organizationId =
    ledger.random() < 0.5 ? null : `org-${Math.floor(ledger.random() * ledger.organizations)}`;
  // One change in ten removes the scope's rule (v2's null rate).
  const drawn = ledger.random() * 0.3;
  return ledger.append(`discount-${model ?? "any"}-${organizationId ?? "any"}`, [
    {
      type: "DiscountSet",
      data: { model, organizationId, rate: drawn < 0.03 ? null : drawn.toFixed(2) },
      metadata: ledger.metadata("admin"),
    },
  ]);
}

function fxRateUpdated(ledger: SyntheticLedger): StreamAppend {
  const day = ledger.now().slice(0, 10);
  return ledger.append(`fx-rate-${day}`, [
    {
      type: "FxRateUpdated",
      data: {
        appliesOn: day,
        rateDate: day,
        rateKrwPerUsd: (1300 + ledger.random() * 200).toFixed(2),
        source: "admin",
      },
      metadata: ledger.metadata("admin"),
    },
  ]);
}

/** A request's usage, charged in the same append or (one in five) left for a later one. */
function usage(ledger: SyntheticLedger): StreamAppend {
  const key = ledger.key();
  const requestId = ledger.id("request");
  const model = ledger.model();
  const startedAt = ledger.now();
  const tokens = {
    input: Math.floor(ledger.random() * 4_000),
    cached: ledger.random() < 0.1 ? null : Math.floor(ledger.random() * 100),
    output: Math.floor(ledger.random() * 2_000),
    reasoning: ledger.random() < 0.1 ? null : 0,
  };
  const common = {
    requestId,
    keyId: key.keyId,
    account: key.owner,
    model,
    endpoint: "chat.completions" as const,
    startedAt,
  };
  const recorded = usageRecorded(ledger, common, tokens);
  const charge = usageCharged(ledger, common, tokens);
  const streamId = `usage-${requestId}`;
  if (ledger.random() < 0.2) {
    ledger.uncharged.push({ streamId, charge });
    return ledger.append(streamId, [recorded]);
  }
  return ledger.append(streamId, [recorded, charge]);
}

type UsageCommon = Pick<
  Extract<LedgerEvent, { type: "UsageRecorded" }>["data"],
  "requestId" | "keyId" | "account" | "model" | "endpoint" | "startedAt"
>;
type UsageTokens = Extract<LedgerEvent, { type: "UsageRecorded" }>["data"]["tokens"];

function usageRecorded(ledger: SyntheticLedger, common: UsageCommon, tokens: UsageTokens): LedgerEvent {
  const owner = common.account;
  return {
    type: "UsageRecorded",
    data: {
      ...common,
      userId: owner.kind === "user" ? owner.id : null,
      organizationId: owner.kind === "organization" ? owner.id : null,
      streamed: ledger.random() < 0.5,
      outcome: "completed",
      tokens,
      usageSource: "upstream",
    },
    metadata: ledger.metadata(`key:${common.keyId}`),
  };
}

/** A charge with fixed prices: the benchmarks and tests need its shape, not a true amount. */
function usageCharged(ledger: SyntheticLedger, common: UsageCommon, tokens: UsageTokens): LedgerEvent {
  return {
    type: "UsageCharged",
    data: {
      ...common,
      amountWon: (ledger.random() * 50).toFixed(6),
      breakdown: {
        tokens,
        inputUsdPerMillionTokens: "1.25",
        cachedInputUsdPerMillionTokens: "0.125",
        outputUsdPerMillionTokens: "10",
        usd: "0.01",
        fxRateKrwPerUsd: "1400",
        fxRateDate: common.startedAt.slice(0, 10),
        discountRate: "0",
        amountWon: "14",
        usageSource: "upstream",
      },
    },
    metadata: ledger.metadata("system:reconciler"),
  };
}

/** Uniform in [0, 1), reproducible from the seed. */
function seededRandom(seed: number): () => number {
  const next = mulberry32(seed);
  return () => next() / 4_294_967_296;
}

function deterministicUuid(text: string): string {
  const hex = createHash("sha256").update(text).digest("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-8${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}
