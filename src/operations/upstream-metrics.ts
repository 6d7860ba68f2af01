import { Counter, Gauge, Histogram } from "prom-client";
import { metricsRegistry } from "../kernel/metrics-registry";
import { type BreakerState, breakerStates } from "../providers/resilience/circuit-breaker";
import type { UpstreamAttempt } from "../providers/resilience/upstream-attempt";
import type { UpstreamObserver } from "../providers/resilience/upstream-call";
import type { UpstreamEndpoint } from "../providers/resilience/upstream-endpoint";

/**
 * Upstream attempts per endpoint (C13). Labels: the endpoint's configured name and the model slug (both
 * from the catalog, a closed set) and the outcome's class; never a URL or key.
 */

const attemptsTotal = new Counter({
  name: "won_gateway_upstream_attempts_total",
  help: "Attempts at an upstream endpoint, by endpoint, model and outcome (2xx, 4xx, 429, 5xx, connection, timeout, malformed, reported, deadline, cancelled)",
  labelNames: ["upstream_endpoint", "model", "outcome"],
  registers: [metricsRegistry],
});

const retriesTotal = new Counter({
  name: "won_gateway_upstream_retries_total",
  help: "Attempts after a request's first, by endpoint and model",
  labelNames: ["upstream_endpoint", "model"],
  registers: [metricsRegistry],
});

const attemptDurationSeconds = new Histogram({
  name: "won_gateway_upstream_attempt_duration_seconds",
  help: "Time from sending an attempt to its answer (JSON), its first output (stream) or its failure, by endpoint, model and outcome",
  labelNames: ["upstream_endpoint", "model", "outcome"],
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
  registers: [metricsRegistry],
});

const breakerState = new Gauge({
  name: "won_gateway_upstream_breaker_state",
  help: "1 for the state each model's circuit breaker at each endpoint is in (closed, open, half-open), 0 for the others",
  labelNames: ["upstream_endpoint", "model", "state"],
  registers: [metricsRegistry],
});

const breakerTransitionsTotal = new Counter({
  name: "won_gateway_upstream_breaker_transitions_total",
  help: "Circuit breaker state changes, by endpoint, model and the state entered",
  labelNames: ["upstream_endpoint", "model", "state"],
  registers: [metricsRegistry],
});

const outstandingRequests = new Gauge({
  name: "won_gateway_upstream_outstanding_requests",
  help: "Requests each endpoint is serving now",
  labelNames: ["upstream_endpoint"],
  registers: [metricsRegistry],
});

const fallbacksTotal = new Counter({
  name: "won_gateway_upstream_fallbacks_total",
  help: "Requests answered by a fallback model, by the model requested and the one that answered",
  labelNames: ["model", "answering_model"],
  registers: [metricsRegistry],
});

/** The outcome label of an attempt: its status class (429 apart: it is retried), or its error. */
export function attemptOutcomeOf(attempt: UpstreamAttempt): string {
  if (attempt.error === null) return "2xx";
  if (attempt.error !== "status") return attempt.error;
  if (attempt.status === 429) return "429";
  return attempt.status !== null && attempt.status >= 500 ? "5xx" : "4xx";
}

export const upstreamMetrics: UpstreamObserver & {
  breakerChanged(endpoint: string, model: string, state: BreakerState): void;
} = {
  attempted(attempt, retry) {
    const outcome = attemptOutcomeOf(attempt);
    attemptsTotal.inc({ upstream_endpoint: attempt.endpoint, model: attempt.model, outcome });
    if (retry) retriesTotal.inc({ upstream_endpoint: attempt.endpoint, model: attempt.model });
    attemptDurationSeconds.observe(
      { upstream_endpoint: attempt.endpoint, model: attempt.model, outcome },
      attempt.durationMs / 1_000,
    );
  },
  outstandingChanged(endpoint: UpstreamEndpoint) {
    outstandingRequests.set({ upstream_endpoint: endpoint.name }, endpoint.outstanding);
  },
  answeredByFallback(requested, answering) {
    fallbacksTotal.inc({ model: requested, answering_model: answering });
  },
  breakerChanged(endpoint, model, state) {
    for (const each of breakerStates)
      breakerState.set({ upstream_endpoint: endpoint, model, state: each }, each === state ? 1 : 0);
    breakerTransitionsTotal.inc({ upstream_endpoint: endpoint, model, state });
  },
};
