import { createHash } from "node:crypto";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allProjections } from "../../projections";
import {
  type AccountReference,
  type EventData,
  type EventMetadata,
  type LedgerEvent,
  writtenSchemaVersionOf,
} from "../../src/ledger/events";
import { rebuildProjections } from "../../src/ledger/ledger-maintenance";
import { ProjectionRunner } from "../../src/ledger/projection/projection-runner";
import type { StreamAppend } from "../../src/ledger/store/event-store";
import { verifyProjections } from "../../src/ledger/verify-projections";
import { type LedgerHarness, openLedgerHarness } from "../support/ledger-harness";

/**
 * Every projection is written twice, `evolve` and `sqlFold`. Over random ledgers — every event type, each
 * projection's every path (keys toggled and deleted, usage recorded, voided, charged later or never,
 * corrected), events stored under older schema versions, instants on either side of a Seoul month — the
 * live runner's SQL folds in random batch sizes, and a rebuild in SQL in random chunk sizes, give the rows
 * `evolve` gives (`ledger verify`).
 */

/** One event to record: through the store, or as an earlier release stored it (an older schema version). */
interface Recorded {
  streamId: string;
  eventId: string;
  event: LedgerEvent;
  /** Set: stored raw under this schema version, its data as that version held it. */
  olderVersion?: { schemaVersion: number; data: Record<string, unknown> };
}

/** Instants on both sides of the Seoul month and day boundaries. */
const instants = [
  "2026-10-31T14:59:59.999Z",
  "2026-10-31T15:00:00.000Z",
  "2026-11-15T03:00:00.000Z",
  "2026-11-30T14:59:59.999Z",
  "2026-12-01T00:00:00.000+09:00",
  "2026-11-20T23:30:00.000+09:00",
];
const amounts = ["1", "1.50", "0.001", "1000", "12.345678", "0"];
const models = ["alpha-5.4", "beta-3-flash"];
const roles = ["owner", "admin", "member"] as const;

/** The random choices of one step; the world turns each into events valid at that point of the ledger. */
const step = fc.oneof(
  fc.record({ kind: fc.constant("issue" as const), owner: fc.nat(3), issuer: fc.nat(2), at: fc.nat(5) }),
  fc.record({ kind: fc.constant("status" as const), key: fc.nat(), status: fc.constantFrom(0, 1) }),
  fc.record({ kind: fc.constant("delete" as const), key: fc.nat() }),
  fc.record({ kind: fc.constant("limits" as const), key: fc.nat(), older: fc.boolean() }),
  fc.record({ kind: fc.constant("topUp" as const), account: fc.nat(3), amount: fc.nat(5), at: fc.nat(5) }),
  {
    // The money steps weigh more: a charged correction takes a request, its charge, the correction and its
    // charge, in that order, on one usage.
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant("request" as const),
      key: fc.nat(),
      at: fc.nat(5),
      recordedAt: fc.nat(5),
      authorized: fc.boolean(),
      voided: fc.boolean(),
      chargedTogether: fc.boolean(),
      recordedVersion: fc.constantFrom(1, 2, 3),
      reported: fc.boolean(),
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant("charge" as const),
      request: fc.nat(),
      version: fc.constantFrom(1, 2, 3),
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({ kind: fc.constant("correct" as const), request: fc.nat(), amount: fc.nat(5) }),
  },
  fc.record({ kind: fc.constant("price" as const), model: fc.nat(1), at: fc.nat(5) }),
  fc.record({
    kind: fc.constant("discount" as const),
    model: fc.option(fc.nat(1)),
    organization: fc.option(fc.nat(1)),
    rate: fc.option(fc.constantFrom("0.1", "0.25", "0.5")),
    at: fc.nat(5),
  }),
  fc.record({ kind: fc.constant("fx" as const), day: fc.nat(2), at: fc.nat(5) }),
  fc.record({
    kind: fc.constant("grant" as const),
    organization: fc.nat(1),
    user: fc.nat(2),
    role: fc.nat(2),
  }),
  fc.record({
    kind: fc.constant("claim" as const),
    organization: fc.nat(1),
    user: fc.nat(2),
    role: fc.option(fc.nat(2)),
  }),
  fc.record({ kind: fc.constant("defaults" as const), organization: fc.nat(1) }),
  fc.record({ kind: fc.constant("threshold" as const), account: fc.nat(3), amount: fc.option(fc.nat(5)) }),
  fc.record({ kind: fc.constant("webhookAdd" as const), account: fc.nat(3) }),
  fc.record({ kind: fc.constant("webhookRemove" as const), webhook: fc.nat() }),
);
type Step = typeof step extends fc.Arbitrary<infer S> ? S : never;

interface Usage {
  requestId: string;
  keyId: string;
  account: AccountReference;
  model: string;
  startedAt: string;
  recordedEventId: string;
  pendingWon: string;
  /** The charge posted, once it is: its event id and amount. */
  charged?: { eventId: string; amountWon: string };
  /** A correcting usage recorded and not charged yet. */
  correcting?: { deliveredWon: string };
  corrected: boolean;
}

/** A ledger of one run, its ids its own (runs share one database). */
class World {
  readonly recorded: Recorded[][] = [];
  private readonly keys: { keyId: string; owner: AccountReference; deleted: boolean }[] = [];
  private readonly usages: Usage[] = [];
  private readonly webhooks: { webhookId: string; account: AccountReference; removed: boolean }[] = [];
  private counter = 0;
  /** Corrections charged: the case the property must reach (see the test's count). */
  chargedCorrections = 0;

  constructor(private readonly run: number) {}

  private id(): string {
    this.counter++;
    const hex = createHash("sha256").update(`${this.run}/${this.counter}`).digest("hex");
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-8${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
  }

  private account(index: number): AccountReference {
    return index < 2
      ? { kind: "user", id: `run${this.run}-user${index}` }
      : { kind: "organization", id: `run${this.run}-organization${index - 2}` };
  }

  private organization(index: number): string {
    return `run${this.run}-organization${index}`;
  }

  private user(index: number): string {
    return `run${this.run}-user${index}`;
  }

  private metadata(at: number, actor = "admin"): EventMetadata {
    return { actor, occurredAt: instants[at % instants.length]! };
  }

  private pick<T>(items: readonly T[], index: number): T | undefined {
    return items.length === 0 ? undefined : items[index % items.length];
  }

  private record(...events: Recorded[]): void {
    if (events.length > 0) this.recorded.push(events);
  }

  take(choice: Step): void {
    switch (choice.kind) {
      case "issue": {
        const keyId = this.id();
        const owner = this.account(choice.owner);
        this.keys.push({ keyId, owner, deleted: false });
        this.record({
          streamId: `apikey-${keyId}`,
          eventId: this.id(),
          event: {
            type: "ApiKeyIssued",
            data: {
              keyId,
              owner,
              issuedByUserId: this.user(choice.issuer),
              name: `key ${this.counter}`,
              description: "",
              keyHash: createHash("sha256").update(keyId).digest("hex"),
              keyPreview: "sk-…abcd",
            },
            metadata: this.metadata(choice.at),
          },
        });
        return;
      }
      case "status":
      case "delete":
      case "limits": {
        const key = this.pick(
          this.keys.filter((candidate) => !candidate.deleted),
          choice.key,
        );
        if (!key) return;
        const streamId = `apikey-${key.keyId}`;
        const common = { keyId: key.keyId, owner: key.owner };
        if (choice.kind === "status") {
          this.record({
            streamId,
            eventId: this.id(),
            event: {
              type: "ApiKeyStatusChanged",
              data: { ...common, status: choice.status as 0 | 1 },
              metadata: this.metadata(0),
            },
          });
        } else if (choice.kind === "delete") {
          key.deleted = true;
          this.record({
            streamId,
            eventId: this.id(),
            event: { type: "ApiKeyDeleted", data: common, metadata: this.metadata(0) },
          });
        } else {
          const data = {
            ...common,
            monthlySpendLimitWon: "100",
            totalSpendLimitWon: null,
            rateLimitRequestsPerMinute: 60,
          };
          this.record({
            streamId,
            eventId: this.id(),
            event: {
              type: "ApiKeyLimitsSet",
              data: { ...data, allowedModels: choice.older ? null : [models[0]!] },
              metadata: this.metadata(0),
            },
            ...(choice.older ? { olderVersion: { schemaVersion: 1, data } } : {}),
          });
        }
        return;
      }
      case "topUp": {
        const account = this.account(choice.account);
        this.record({
          streamId: `account-${account.kind}-${account.id}`,
          eventId: this.id(),
          event: {
            type: "CreditToppedUp",
            data: { account, amountWon: amounts[choice.amount]!, reference: `top-up ${this.counter}` },
            metadata: this.metadata(choice.at),
          },
        });
        return;
      }
      case "request":
        this.request(choice);
        return;
      case "charge": {
        const usage = this.pick(
          this.usages.filter((candidate) => !candidate.charged || candidate.correcting),
          choice.request,
        );
        if (usage) this.record(this.charge(usage, choice.version));
        return;
      }
      case "correct": {
        const usage = this.pick(
          this.usages.filter(
            (candidate) => candidate.charged && !candidate.correcting && !candidate.corrected,
          ),
          choice.request,
        );
        if (usage) this.record(this.correction(usage, amounts[choice.amount]!));
        return;
      }
      case "price":
        this.record({
          streamId: `price-${models[choice.model]}`,
          eventId: this.id(),
          event: {
            type: "ModelPriceSet",
            data: {
              model: models[choice.model]!,
              inputUsdPerMillionTokens: "1.25",
              outputUsdPerMillionTokens: "10.0",
              cachedInputUsdPerMillionTokens: "0.125",
            },
            metadata: this.metadata(choice.at),
          },
        });
        return;
      case "discount": {
        const model = choice.model === null ? null : models[choice.model]!;
        const organizationId = choice.organization === null ? null : this.organization(choice.organization);
        this.record({
          streamId: `discount-${model ?? "any"}-${organizationId ?? "any"}`,
          eventId: this.id(),
          event: {
            type: "DiscountSet",
            data: { model, organizationId, rate: choice.rate },
            metadata: this.metadata(choice.at),
          },
        });
        return;
      }
      case "fx": {
        const appliesOn = ["2026-10-31", "2026-11-01", "2026-11-02"][choice.day]!;
        // A weekend applies Friday's rate: the rate's date is not always the day it applies on.
        const rateDate = ["2026-10-30", "2026-10-30", "2026-11-02"][choice.day]!;
        this.record({
          streamId: `fx-rate-${appliesOn}`,
          eventId: this.id(),
          event: {
            type: "FxRateUpdated",
            data: { appliesOn, rateDate, rateKrwPerUsd: "1400.50", source: "admin" },
            metadata: this.metadata(choice.at),
          },
        });
        return;
      }
      case "grant":
      case "claim": {
        const organizationId = this.organization(choice.organization);
        const userId = this.user(choice.user);
        const streamId = `organization-${organizationId}`;
        const eventId = this.id();
        if (choice.kind === "grant") {
          this.record({
            streamId,
            eventId,
            event: {
              type: "OrganizationRoleGranted",
              data: { organizationId, userId, role: roles[choice.role]! },
              metadata: this.metadata(choice.user, `user:${userId}`),
            },
          });
        } else {
          this.record({
            streamId,
            eventId,
            event: {
              type: "OrganizationRoleClaimed",
              data: { organizationId, userId, role: choice.role === null ? null : roles[choice.role]! },
              metadata: this.metadata(choice.user + 1, "oidc:https://issuer.example"),
            },
          });
        }
        return;
      }
      case "defaults": {
        const organizationId = this.organization(choice.organization);
        this.record({
          streamId: `organization-${organizationId}`,
          eventId: this.id(),
          event: {
            type: "OrganizationKeyDefaultsSet",
            data: { organizationId, allowedModels: [models[1]!] },
            metadata: this.metadata(0),
          },
        });
        return;
      }
      case "threshold": {
        const account = this.account(choice.account);
        this.record({
          streamId: `alerts-${account.kind}-${account.id}`,
          eventId: this.id(),
          event: {
            type: "AlertThresholdSet",
            data: { account, balanceBelowWon: choice.amount === null ? null : amounts[choice.amount]! },
            metadata: this.metadata(0),
          },
        });
        return;
      }
      case "webhookAdd": {
        const webhookId = this.id();
        const account = this.account(choice.account);
        this.webhooks.push({ webhookId, account, removed: false });
        this.record({
          streamId: `webhook-${webhookId}`,
          eventId: this.id(),
          event: {
            type: "WebhookEndpointAdded",
            data: { webhookId, account, url: "https://hooks.example/a", events: ["balance.low"] },
            metadata: this.metadata(1),
          },
        });
        return;
      }
      case "webhookRemove": {
        const webhook = this.pick(
          this.webhooks.filter((candidate) => !candidate.removed),
          choice.webhook,
        );
        if (!webhook) return;
        webhook.removed = true;
        this.record({
          streamId: `webhook-${webhook.webhookId}`,
          eventId: this.id(),
          event: {
            type: "WebhookEndpointRemoved",
            data: { webhookId: webhook.webhookId, account: webhook.account },
            metadata: this.metadata(2),
          },
        });
        return;
      }
      default: {
        const unreachable: never = choice;
        throw new Error(`unknown step ${JSON.stringify(unreachable)}`);
      }
    }
  }

  private request(choice: Extract<Step, { kind: "request" }>): void {
    const key = this.pick(this.keys, choice.key);
    if (!key) return;
    const requestId = `run${this.run}-request${this.counter}`;
    const streamId = `usage-${requestId}`;
    const startedAt = instants[choice.at]!;
    const common = {
      requestId,
      keyId: key.keyId,
      account: key.owner,
      userId: key.owner.kind === "user" ? key.owner.id : null,
      organizationId: key.owner.kind === "organization" ? key.owner.id : null,
      model: models[choice.at % 2]!,
      endpoint: "chat.completions" as const,
      streamed: false,
      startedAt,
    };
    const events: Recorded[] = [];
    if (choice.authorized) {
      events.push({
        streamId,
        eventId: this.id(),
        event: {
          type: "UsageAuthorized",
          data: {
            ...common,
            holdWon: "5",
            estimate: { inputTokensMax: 100, outputTokensMax: 100, estimatedWon: "5" },
            gatewayInstance: "gateway-1",
            expiresAt: "2026-12-31T00:00:00.000Z",
          },
          metadata: this.metadata(choice.at),
        },
      });
    }
    if (choice.voided) {
      const data = { requestId, account: key.owner, releasedWon: "5", reason: "upstream-failed" as const };
      events.push({
        streamId,
        eventId: this.id(),
        event: {
          type: "UsageVoided",
          data: { ...data, attempts: null },
          metadata: this.metadata(choice.recordedAt),
        },
        ...(choice.recordedVersion === 1 ? { olderVersion: { schemaVersion: 1, data } } : {}),
      });
      this.record(...events);
      return;
    }
    const tokens = choice.reported
      ? { input: 120, cached: 20, output: 40, reasoning: 10 }
      : { input: 120, cached: null, output: 40, reasoning: null };
    const v1 = { ...common, outcome: "completed" as const, tokens, usageSource: "upstream" as const };
    const v2 = { ...v1, heldWon: choice.authorized ? "5" : "0", pendingWon: "3.5" };
    const recordedEventId = this.id();
    const usage: Usage = {
      requestId,
      keyId: key.keyId,
      account: key.owner,
      model: common.model,
      startedAt,
      recordedEventId,
      pendingWon: choice.recordedVersion === 1 ? "0" : "3.5",
      corrected: false,
    };
    this.usages.push(usage);
    const olderData = choice.recordedVersion === 1 ? v1 : choice.recordedVersion === 2 ? v2 : undefined;
    events.push({
      streamId,
      eventId: recordedEventId,
      event: {
        type: "UsageRecorded",
        data: { ...v2, corrects: null, attempts: null },
        metadata: this.metadata(choice.recordedAt, `key:${key.keyId}`),
      },
      ...(olderData ? { olderVersion: { schemaVersion: choice.recordedVersion, data: olderData } } : {}),
    });
    // Charged in the same transaction (the worker keeping up), or by a later step, or never.
    if (choice.chargedTogether) events.push(this.charge(usage, choice.recordedVersion));
    this.record(...events);
  }

  /** The usage's charge, or the charge of its correcting usage. */
  private charge(usage: Usage, version: number): Recorded {
    const streamId = `usage-${usage.requestId}`;
    const correcting = usage.correcting;
    const deliveredWon = correcting?.deliveredWon ?? "3.5";
    const tokens = { input: 120, cached: 20, output: 40, reasoning: 10 };
    const breakdown = {
      tokens,
      inputUsdPerMillionTokens: "1.25",
      cachedInputUsdPerMillionTokens: "0.125",
      outputUsdPerMillionTokens: "10",
      usd: "0.0025",
      fxRateKrwPerUsd: "1400",
      fxRateDate: "2026-10-30",
      discountRate: "0",
      amountWon: deliveredWon,
      usageSource: "upstream" as const,
    };
    const eventId = this.id();
    const common = {
      requestId: usage.requestId,
      keyId: usage.keyId,
      account: usage.account,
      model: usage.model,
      endpoint: "chat.completions" as const,
      startedAt: usage.startedAt,
      breakdown,
    };
    const metadata = this.metadata(this.counter, "system:reconciler");
    if (correcting && usage.charged) {
      const correctedAmountWon = usage.charged.amountWon;
      const amountWon = (Number(deliveredWon) - Number(correctedAmountWon)).toFixed(6);
      usage.correcting = undefined;
      usage.corrected = true;
      this.chargedCorrections++;
      const data: EventData<"UsageCharged"> = {
        ...common,
        amountWon,
        releasedPendingWon: "0",
        correction: {
          correctsEventId: usage.charged.eventId,
          correctedAmountWon,
          correctedTokens: { input: 100, cached: null, output: 30, reasoning: null },
        },
      };
      return { streamId, eventId, event: { type: "UsageCharged", data, metadata } };
    }
    usage.charged = { eventId, amountWon: deliveredWon };
    const v1 = { ...common, amountWon: deliveredWon };
    const v2 = { ...v1, releasedPendingWon: usage.pendingWon };
    const olderData = version === 1 ? v1 : version === 2 ? v2 : undefined;
    return {
      streamId,
      eventId,
      event: { type: "UsageCharged", data: { ...v2, correction: null }, metadata },
      ...(olderData ? { olderVersion: { schemaVersion: version, data: olderData } } : {}),
    };
  }

  /** The gateway's delivered usage, recorded after the orphan sweep's estimate was charged (C10). */
  private correction(usage: Usage, deliveredWon: string): Recorded {
    usage.correcting = { deliveredWon };
    return {
      streamId: `usage-${usage.requestId}`,
      eventId: this.id(),
      event: {
        type: "UsageRecorded",
        data: {
          requestId: usage.requestId,
          keyId: usage.keyId,
          account: usage.account,
          userId: null,
          organizationId: null,
          model: usage.model,
          endpoint: "chat.completions",
          streamed: true,
          outcome: "completed",
          tokens: { input: 200, cached: null, output: 60, reasoning: null },
          usageSource: "upstream",
          startedAt: usage.startedAt,
          heldWon: "0",
          pendingWon: (Number(deliveredWon) - Number(usage.pendingWon)).toFixed(6),
          corrects: { eventId: usage.recordedEventId, pendingWon: usage.pendingWon },
          attempts: null,
        },
        metadata: this.metadata(this.counter, "key:corrected"),
      },
    };
  }
}

describe("each projection's SQL fold against its TypeScript fold", () => {
  let harness: LedgerHarness;
  let run = 0;

  beforeAll(async () => {
    harness = await openLedgerHarness("sql_fold_property");
  });
  afterAll(async () => {
    await harness?.dispose();
  });

  /** Appends a run's events, each group in one transaction; older versions as an earlier release stored them. */
  async function recordAll(world: World): Promise<void> {
    for (const group of world.recorded) {
      if (group.every((recorded) => !recorded.olderVersion)) {
        const appends: StreamAppend[] = group.map((recorded) => ({
          streamId: recorded.streamId,
          expectedVersion: "any",
          events: [{ eventId: recorded.eventId, event: recorded.event }],
        }));
        await harness.append(...appends);
        continue;
      }
      const client = await harness.ledger.pool.connect();
      try {
        await client.query("BEGIN");
        for (const recorded of group) {
          const { type, data, metadata } = recorded.event;
          await client.query(
            `INSERT INTO ledger_events (transaction_order, event_id, stream_id, stream_version, type, schema_version,
               data, metadata)
             SELECT pg_current_xact_id()::text::bigint + (SELECT transaction_order_offset FROM ledger_settings),
                    $1, $2, coalesce((SELECT max(stream_version) FROM ledger_events WHERE stream_id = $2), -1) + 1,
                    $3, $4, $5, $6`,
            [
              recorded.eventId,
              recorded.streamId,
              type,
              recorded.olderVersion?.schemaVersion ?? writtenSchemaVersionOf(recorded.event),
              JSON.stringify(recorded.olderVersion?.data ?? data),
              JSON.stringify(metadata),
            ],
          );
        }
        await client.query("COMMIT");
      } finally {
        client.release();
      }
    }
  }

  it("given random ledgers, then live batches and rebuilds in SQL give every row evolve gives", async () => {
    let chargedCorrections = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(step, { minLength: 10, maxLength: 60 }),
        fc.integer({ min: 1, max: 9 }),
        fc.integer({ min: 1, max: 40 }),
        async (steps, batchSizeMax, chunkEventsMax) => {
          run++;
          const world = new World(run);
          for (const choice of steps) world.take(choice);
          chargedCorrections += world.chargedCorrections;
          await recordAll(world);
          await harness.visible();
          const context = { pool: harness.ledger.pool, store: harness.store, projections: allProjections };

          // Live: small batches split requests, corrections and transactions across them.
          const runner = new ProjectionRunner({
            pool: harness.ledger.pool,
            connectionString: harness.database.url,
            store: harness.store,
            projections: allProjections,
            batchSizeMax,
            standbyRetryMs: 100,
          });
          const client = await harness.ledger.pool.connect();
          try {
            await runner.prepare(client);
            await runner.catchUp(client);
          } finally {
            client.release();
          }
          expect(await verifyProjections(context)).toEqual([]);

          // Rebuilt: chunks of whole transactions, merged at the end.
          await rebuildProjections(context, { fold: "sql", batchSizeMax: 1_000, chunkEventsMax });
          expect(await verifyProjections(context)).toEqual([]);
        },
      ),
      { numRuns: 12, seed: 20261130, endOnFailure: true },
    );
    // A fold of corrections that goes wrong only once one is charged (its amount, its charge's time) is
    // found only if some run charges one.
    expect(chargedCorrections).toBeGreaterThan(0);
  }, 600_000);
});
