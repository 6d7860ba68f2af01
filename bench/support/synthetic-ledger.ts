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

export function* syntheticAppends(options: SyntheticLedgerOptions): Generator<StreamAppend> {
  const random = seededRandom(options.seed);
  const users = options.userCount ?? 500;
  const organizations = options.organizationCount ?? 50;
  const models = ["alpha-5.4-mini", "beta-3-flash", "delta-4.6-sonnet", "gamma-4-5"];
  const clock = Date.parse("2026-10-01T00:00:00Z");
  const keys: { keyId: string; owner: { kind: "user" | "organization"; id: string } }[] = [];
  /** Usage recorded and not charged yet: its stream and its charge. */
  const uncharged: { streamId: string; charge: LedgerEvent }[] = [];
  const versions = new Map<string, number>();
  let produced = 0;
  let sequence = 0;

  const id = (label: string) => deterministicUuid(`${options.seed}:${label}:${sequence++}`);
  const metadata = (actor: string): EventMetadata => ({
    actor,
    occurredAt: new Date(clock + sequence * 1_000).toISOString(),
  });
  const append = (streamId: string, events: LedgerEvent[]): StreamAppend => {
    const version = versions.get(streamId);
    versions.set(streamId, (version ?? -1) + events.length);
    produced += events.length;
    return {
      streamId,
      expectedVersion: version === undefined ? "no-stream" : version,
      events: events.map((event) => ({ eventId: id("event"), event })),
    };
  };
  const account = () =>
    random() < 0.7
      ? { kind: "user" as const, id: `user-${Math.floor(random() * users)}` }
      : { kind: "organization" as const, id: `org-${Math.floor(random() * organizations)}` };

  while (produced < options.eventCount) {
    if (uncharged.length > 0 && random() < 0.2) {
      const { streamId, charge } = uncharged.shift()!;
      yield append(streamId, [{ ...charge, metadata: metadata("system:reconciler") }]);
      continue;
    }
    const roll = random();
    if (roll < 0.08 || keys.length === 0) {
      const owner = account();
      const keyId = id("key");
      keys.push({ keyId, owner });
      yield append(`apikey-${keyId}`, [
        {
          type: "ApiKeyIssued",
          data: {
            keyId,
            owner,
            issuedByUserId: owner.kind === "user" ? owner.id : "user-0",
            name: `key ${keys.length}`,
            description: "",
            keyHash: createHash("sha256").update(keyId).digest("hex"),
            keyPreview: "svc_abcd…wxyz",
          },
          metadata: metadata(`user:${owner.id}`),
        },
      ]);
    } else if (roll < 0.098) {
      const key = keys[Math.floor(random() * keys.length)]!;
      yield append(`apikey-${key.keyId}`, [
        {
          type: "ApiKeyStatusChanged",
          data: { keyId: key.keyId, owner: key.owner, status: random() < 0.5 ? 0 : 1 },
          metadata: metadata("user:someone"),
        },
      ]);
    } else if (roll < 0.1) {
      const key = keys.splice(Math.floor(random() * keys.length), 1)[0]!;
      yield append(`apikey-${key.keyId}`, [
        {
          type: "ApiKeyDeleted",
          data: { keyId: key.keyId, owner: key.owner },
          metadata: metadata("user:someone"),
        },
      ]);
    } else if (roll < 0.2) {
      const target = account();
      yield append(`account-${target.kind}-${target.id}`, [
        {
          type: "CreditToppedUp",
          data: {
            account: target,
            amountWon: `${Math.floor(random() * 100_000)}.${Math.floor(random() * 100)}`,
            reference: "synthetic",
          },
          metadata: metadata("admin"),
        },
      ]);
    } else if (roll < 0.205) {
      const model = models[Math.floor(random() * models.length)]!;
      yield append(`model-price-${model}`, [
        {
          type: "ModelPriceSet",
          data: {
            model,
            inputUsdPerMillionTokens: (random() * 10).toFixed(3),
            outputUsdPerMillionTokens: (random() * 40).toFixed(3),
            cachedInputUsdPerMillionTokens: (random() * 1).toFixed(3),
          },
          metadata: metadata("admin"),
        },
      ]);
    } else if (roll < 0.21) {
      const model = random() < 0.5 ? null : models[Math.floor(random() * models.length)]!;
      const organizationId = random() < 0.5 ? null : `org-${Math.floor(random() * organizations)}`;
      yield append(`discount-${model ?? "any"}-${organizationId ?? "any"}`, [
        {
          type: "DiscountSet",
          data: { model, organizationId, rate: (random() * 0.3).toFixed(2) },
          metadata: metadata("admin"),
        },
      ]);
    } else if (roll < 0.215) {
      const day = new Date(clock + sequence * 1_000).toISOString().slice(0, 10);
      yield append(`fx-rate-${day}`, [
        {
          type: "FxRateUpdated",
          data: {
            appliesOn: day,
            rateDate: day,
            rateKrwPerUsd: (1300 + random() * 200).toFixed(2),
            source: "admin",
          },
          metadata: metadata("admin"),
        },
      ]);
    } else {
      const key = keys[Math.floor(random() * keys.length)]!;
      const requestId = id("request");
      const model = models[Math.floor(random() * models.length)]!;
      const startedAt = new Date(clock + sequence * 1_000).toISOString();
      const tokens = {
        input: Math.floor(random() * 4_000),
        cached: random() < 0.1 ? null : Math.floor(random() * 100),
        output: Math.floor(random() * 2_000),
        reasoning: random() < 0.1 ? null : 0,
      };
      const common = {
        requestId,
        keyId: key.keyId,
        account: key.owner,
        model,
        endpoint: "chat.completions" as const,
        startedAt,
      };
      const recorded: LedgerEvent = {
        type: "UsageRecorded",
        data: {
          ...common,
          userId: key.owner.kind === "user" ? key.owner.id : null,
          organizationId: key.owner.kind === "organization" ? key.owner.id : null,
          streamed: random() < 0.5,
          outcome: "completed",
          tokens,
          usageSource: "upstream",
        },
        metadata: metadata(`key:${key.keyId}`),
      };
      const charge: LedgerEvent = {
        type: "UsageCharged",
        data: {
          ...common,
          amountWon: (random() * 50).toFixed(6),
          breakdown: {
            tokens,
            inputUsdPerMillionTokens: "1.25",
            cachedInputUsdPerMillionTokens: "0.125",
            outputUsdPerMillionTokens: "10",
            usd: "0.01",
            fxRateKrwPerUsd: "1400",
            fxRateDate: startedAt.slice(0, 10),
            discountRate: "0",
            amountWon: "14",
            usageSource: "upstream",
          },
        },
        metadata: metadata("system:reconciler"),
      };
      const streamId = `usage-${requestId}`;
      if (random() < 0.2) {
        yield append(streamId, [recorded]);
        uncharged.push({ streamId, charge });
      } else {
        yield append(streamId, [recorded, charge]);
      }
    }
  }
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
