import pino from "pino";
import { GenerationHolds, type GenerationHoldsOptions } from "../../src/billing/holds/generation-holds";
import { HoldPricing } from "../../src/billing/holds/hold-pricing";
import type { RowCompletion } from "../../src/billing/holds/hold-row-completion";
import { UsageOutbox } from "../../src/billing/holds/usage-outbox";
import type { PricingReadModel } from "../../src/billing/read-models/pricing-read-model";

/**
 * A gateway's holds with everything but the authorizer and the pricing read faked to succeed silently: for
 * tests of what the hold path does with one statement's or one read's answer.
 */
export function generationHoldsWithFakes(parts: {
  authorizer: GenerationHoldsOptions["authorizer"];
  pricing: PricingReadModel;
  availableWon: string;
  /** How long a request waits for its hold's statement (10 s unless a test says). */
  answerWaitMs?: number;
  /** How long a hold lasts unrenewed (11 minutes unless a test says). */
  holdLifetimeMs?: number;
  /** Told of every hold row the outbox completes (a usage, a void). */
  completed?: (completion: RowCompletion) => void;
}): GenerationHolds {
  return new GenerationHolds({
    authorizer: parts.authorizer,
    pricing: new HoldPricing({ read: parts.pricing, ttlMs: 60_000, entriesMax: 10 }),
    outbox: new UsageOutbox({
      completion: {
        complete: async (completion) => {
          parts.completed?.(completion);
          return true;
        },
        hasRow: async () => false,
        voidIfOpen: async () => false,
      },
      log: { settled: () => {} },
      store: { readStream: async () => [], append: async () => ({}) as never },
      reserves: { release: async () => {} },
      charges: { enqueueCharge: () => {} },
      logger: pino({ level: "silent" }),
      entriesMax: 10,
      retryDelaysMs: [10],
    }),
    // Holds the fakes place stay standing: the release of one is hold-progress's own test.
    progress: { track: () => () => {}, stillHeld: () => true, clockMs: () => 0 },
    availableNow: async () => parts.availableWon,
    gatewayInstance: "gateway-test",
    limits: {
      expectedOutputTokens: 1_024,
      holdFirstBelowHolds: 10,
      holdLifetimeMs: parts.holdLifetimeMs ?? 660_000,
      refusalRecheckWaitMs: 10,
      answerWaitMs: parts.answerWaitMs ?? 10_000,
    },
    logger: pino({ level: "silent" }),
  });
}
