import { describe, expect, it } from "vitest";
import { webhookLimits } from "../../src/kernel/limits";
import { defaultWebhookWorkerSettings, nextAttemptAt } from "../../workers/deliver-webhooks";

/** C14: a message is retried for 24 h; the last attempt is made as that window closes, not hours before. */

function scheduleOf(createdAtMs: number, answerTakesMs: number): number[] {
  const attemptsAtMs = [createdAtMs];
  // `attempts` counts the ones before the attempt that just failed, as the outbox row does then.
  for (let attempts = 0; ; attempts++) {
    const failedAt = new Date(attemptsAtMs[attemptsAtMs.length - 1]! + answerTakesMs);
    const next = nextAttemptAt(
      { attempts, createdAt: new Date(createdAtMs) },
      failedAt,
      defaultWebhookWorkerSettings,
    );
    if (next === null) return attemptsAtMs;
    attemptsAtMs.push(next.getTime());
  }
}

describe("the webhook retry schedule", () => {
  it("given a receiver that never answers, then attempts follow the delays and the last is at the window's end", () => {
    const createdAtMs = Date.parse("2026-11-30T00:00:00Z");
    for (const answerTakesMs of [0, webhookLimits.deliveryTimeoutMs]) {
      const attemptsAtMs = scheduleOf(createdAtMs, answerTakesMs);
      const last = attemptsAtMs[attemptsAtMs.length - 1]!;
      expect(last - createdAtMs, `answers after ${answerTakesMs} ms`).toBe(webhookLimits.retryWindowMs);
      // Before the cut, each wait is the schedule's delay after the failed attempt's end.
      for (let index = 1; index < attemptsAtMs.length - 1; index++)
        expect(attemptsAtMs[index]! - (attemptsAtMs[index - 1]! + answerTakesMs)).toBe(
          webhookLimits.retryDelaysMs[Math.min(index - 1, webhookLimits.retryDelaysMs.length - 1)],
        );
    }
  });

  it("given an attempt that failed after the window closed, then there is none after it", () => {
    const createdAt = new Date("2026-11-30T00:00:00Z");
    const windowEnd = new Date(createdAt.getTime() + webhookLimits.retryWindowMs);
    expect(nextAttemptAt({ attempts: 7, createdAt }, windowEnd, defaultWebhookWorkerSettings)).toBeNull();
    expect(
      nextAttemptAt(
        { attempts: 7, createdAt },
        new Date(windowEnd.getTime() - 1),
        defaultWebhookWorkerSettings,
      ),
    ).toEqual(windowEnd);
  });

  it("given an answer asking to retry later than the schedule would, then the next attempt waits for it, until the window's end", () => {
    const createdAt = new Date("2026-11-30T00:00:00Z");
    const failedAt = new Date(createdAt.getTime() + 1_000);
    const windowEnd = new Date(createdAt.getTime() + webhookLimits.retryWindowMs);
    const settings = defaultWebhookWorkerSettings;

    expect(nextAttemptAt({ attempts: 0, createdAt }, failedAt, settings, 120_000)).toEqual(
      new Date(failedAt.getTime() + 120_000),
    );
    // Sooner than the schedule's delay: the schedule's delay.
    expect(nextAttemptAt({ attempts: 1, createdAt }, failedAt, settings, 1_000)).toEqual(
      new Date(failedAt.getTime() + webhookLimits.retryDelaysMs[1]!),
    );
    expect(nextAttemptAt({ attempts: 0, createdAt }, failedAt, settings, 48 * 3_600_000)).toEqual(windowEnd);
  });
});
