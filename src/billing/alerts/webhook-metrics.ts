import { Counter } from "prom-client";
import { metricsRegistry } from "../../kernel/metrics-registry";

/**
 * Webhook delivery attempts (C14) by how they ended: `delivered`, `retried` (failed, due again) or `failed`
 * (failed after the retry window, or answered 410 Gone: the message is given up). Never labelled by endpoint,
 * account or URL.
 */

export const webhookAttemptOutcomes = ["delivered", "retried", "failed"] as const;
export type WebhookAttemptOutcome = (typeof webhookAttemptOutcomes)[number];

const attemptsTotal = new Counter({
  name: "won_gateway_webhook_attempts_total",
  help: "Webhook delivery attempts by outcome: delivered, retried (failed, due again), failed (given up: the retry window is over, or 410 Gone)",
  labelNames: ["outcome"],
  registers: [metricsRegistry],
});
for (const outcome of webhookAttemptOutcomes) attemptsTotal.inc({ outcome }, 0);

export const webhookMetrics = {
  attempted(outcome: WebhookAttemptOutcome): void {
    attemptsTotal.inc({ outcome });
  },
};
