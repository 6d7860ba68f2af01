import { Counter, Gauge, Histogram } from "prom-client";
import { metricsRegistry } from "../kernel/metrics-registry";

/**
 * The money side: won charged, charge lag, and holds (C10). Amounts are observed as the decimal strings
 * the ledger carries and turned into floats here only: a metric is for watching trends, never for
 * accounting (the ledger is the record). Charges carry the model requested and the one charged — a
 * configured fallback's when it answered — as the request metrics name them (`gen_ai_request_model`,
 * `gen_ai_response_model`), so won per request reads the same way on both.
 */

const chargeLabels = ["gen_ai_request_model", "gen_ai_response_model", "key_kind"] as const;

const chargedWonTotal = new Counter({
  name: "won_gateway_charged_won_total",
  help: "Won charged by the reconciler, by model requested, model charged and key kind (float: for trends, the ledger is exact)",
  labelNames: chargeLabels,
  registers: [metricsRegistry],
});

const chargesTotal = new Counter({
  name: "won_gateway_charges_total",
  help: "Usages charged by the reconciler, by model requested, model charged and key kind",
  labelNames: chargeLabels,
  registers: [metricsRegistry],
});

const chargeLagSeconds = new Histogram({
  name: "won_gateway_charge_lag_seconds",
  help: "Time from a usage being recorded to its charge being appended",
  buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
  registers: [metricsRegistry],
});

const correctionsTotal = new Counter({
  name: "won_gateway_charge_corrections_total",
  help: "Charges of correcting usages (a gateway's settlement after the orphan sweep's estimate), by direction",
  labelNames: ["direction"],
  registers: [metricsRegistry],
});

const correctedWonTotal = new Counter({
  name: "won_gateway_corrected_won_total",
  help: "Won moved by corrections, as an absolute amount by direction (up: charged more, down: refunded)",
  labelNames: ["direction"],
  registers: [metricsRegistry],
});

const answersBeforeDurableUsageTotal = new Counter({
  name: "won_gateway_answers_before_durable_usage_total",
  help: "Complete answers sent before their usage was durable (the ledger was away past the wait bound)",
  registers: [metricsRegistry],
});

export const holdOutcomes = ["placed", "refused", "posted", "voided", "orphaned"] as const;
export type HoldOutcome = (typeof holdOutcomes)[number];

const holdsTotal = new Counter({
  name: "won_gateway_holds_total",
  help: "Holds (C10) by outcome: placed, refused (available below 1 won), posted, voided, orphaned",
  labelNames: ["outcome", "key_kind"],
  registers: [metricsRegistry],
});

const heldWon = new Gauge({
  name: "won_gateway_held_won",
  help: "Won held by the holds this process placed and has not settled yet",
  labelNames: ["key_kind"],
  registers: [metricsRegistry],
});

const settlementsWaiting = new Gauge({
  name: "won_gateway_settlements_waiting",
  help: "Settlements (usages, voids of holds) this process has yet to write: rises while the database is away",
  registers: [metricsRegistry],
});

export const billingMetrics = {
  /** A settlement begins waiting to be written (+1), or is written (-1). */
  observeSettlementsWaiting(change: 1 | -1): void {
    settlementsWaiting.inc(change);
  },

  /** One charge appended by the reconciler. */
  observeCharge(charge: {
    requestedModel: string;
    /** The model the usage was recorded and priced as: the requested one, or the fallback that answered. */
    chargedModel: string;
    keyKind: string;
    amountWon: string;
    /** Recorded-to-charged, in seconds. */
    lagSeconds: number;
  }): void {
    const labels = {
      gen_ai_request_model: charge.requestedModel,
      gen_ai_response_model: charge.chargedModel,
      key_kind: charge.keyKind,
    };
    chargesTotal.inc(labels);
    chargedWonTotal.inc(labels, Number(charge.amountWon));
    chargeLagSeconds.observe(Math.max(0, charge.lagSeconds));
  },

  observeAnswerBeforeDurableUsage(): void {
    answersBeforeDurableUsageTotal.inc();
  },

  /** One correction charged: `amountWon` is signed (a counter only rises, so the direction is a label). */
  observeCorrection(amountWon: string): void {
    const amount = Number(amountWon);
    const direction = amount < 0 ? "down" : "up";
    correctionsTotal.inc({ direction });
    correctedWonTotal.inc({ direction }, Math.abs(amount));
  },

  /**
   * One step of a hold's life. `placed` adds `amountWon` to the held gauge; `posted` and `voided` take the
   * amount that was held away again; `refused` holds nothing, and `orphaned` (counted by the worker that
   * settles it) was held by a process that is gone, so neither moves this process's gauge.
   */
  observeHold(hold: { outcome: HoldOutcome; keyKind: string; amountWon: string }): void {
    holdsTotal.inc({ outcome: hold.outcome, key_kind: hold.keyKind });
    const amount = Number(hold.amountWon);
    switch (hold.outcome) {
      case "placed":
        heldWon.inc({ key_kind: hold.keyKind }, amount);
        return;
      case "posted":
      case "voided":
        heldWon.dec({ key_kind: hold.keyKind }, amount);
        return;
      case "orphaned":
      case "refused":
        return;
      default: {
        const unreachable: never = hold.outcome;
        throw new Error(`unknown hold outcome ${String(unreachable)}`);
      }
    }
  },
};
