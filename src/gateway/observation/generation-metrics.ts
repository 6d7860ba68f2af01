import { assert } from "../../kernel/assert";
import { metricsRegistry } from "../../kernel/metrics-registry";
import { SeriesCounter } from "../../kernel/series-counter";
import { SeriesHistogram } from "../../kernel/series-histogram";

/**
 * Metrics of the HTTP edge and of generation, named after the OpenTelemetry GenAI semantic conventions
 * where one exists (`gen_ai.server.request.duration` → `gen_ai_server_request_duration_seconds`,
 * `gen_ai.server.time_to_first_token` → `gen_ai_server_time_to_first_token_seconds`,
 * `gen_ai.client.token.usage` → `gen_ai_client_token_usage` with `gen_ai_token_type`,
 * `gen_ai.server.time_per_output_token` → `gen_ai_server_time_per_output_token_seconds`), and
 * `won_gateway_…` for the gateway's own. Labels follow the conventions' attribute names where one exists
 * (`gen_ai_request_model`, `gen_ai_response_model`, `gen_ai_operation_name`, `gen_ai_provider_name`,
 * `error_type`), each from a small closed set (metric-labels.ts). `gen_ai_response_model` is the model that
 * answered — a configured fallback's in place of the one requested — so a dashboard shows which upstream
 * model served the traffic, and `gen_ai_provider_name` that model's family. Histogram buckets follow the
 * conventions' advice.
 *
 * Every request observes up to seven series; each label combination's series are resolved once and kept
 * (series-counter.ts, series-histogram.ts), so a request's metrics cost a key and a map lookup.
 */

const generationLabels = [
  "gen_ai_request_model",
  "gen_ai_response_model",
  "gen_ai_operation_name",
  "gen_ai_provider_name",
  "endpoint",
  "key_kind",
] as const;
const requestLabels = [...generationLabels, "status", "error_type"] as const;

const requestsTotal = new SeriesCounter({
  name: "won_gateway_requests_total",
  help: "HTTP requests answered, by model, endpoint, status and key kind",
  labelNames: requestLabels,
  registers: [metricsRegistry],
});

const requestDurationSeconds = new SeriesHistogram({
  name: "gen_ai_server_request_duration_seconds",
  help: "Time from receiving a request to its last byte (gen_ai.server.request.duration)",
  labelNames: requestLabels,
  buckets: [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92],
  registers: [metricsRegistry],
});

const timeToFirstTokenSeconds = new SeriesHistogram({
  name: "gen_ai_server_time_to_first_token_seconds",
  help: "Time from receiving a request to the first output token from upstream (gen_ai.server.time_to_first_token)",
  labelNames: generationLabels,
  buckets: [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10],
  registers: [metricsRegistry],
});

const tokenUsage = new SeriesHistogram({
  name: "gen_ai_client_token_usage",
  help: "Tokens of one generation as recorded for billing, by gen_ai_token_type (gen_ai.client.token.usage); _sum is the total",
  labelNames: [...generationLabels, "gen_ai_token_type"],
  buckets: [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304],
  registers: [metricsRegistry],
});

const timePerOutputTokenSeconds = new SeriesHistogram({
  name: "gen_ai_server_time_per_output_token_seconds",
  help: "Time per output token after the first, of a generation that produced two or more (gen_ai.server.time_per_output_token)",
  labelNames: generationLabels,
  buckets: [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5,
  ],
  registers: [metricsRegistry],
});

const overheadSeconds = new SeriesHistogram({
  name: "won_gateway_overhead_seconds",
  help: "Time a generation request spent in the gateway rather than waiting for the upstream",
  labelNames: generationLabels,
  buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
  registers: [metricsRegistry],
});

/** The labels every request and generation metric carries. */
export interface GenerationLabels {
  model: string;
  /** The model that answered: `model`, a fallback of it, or "none" when no upstream answered. */
  responseModel: string;
  operationName: string;
  providerName: string;
  endpoint: string;
  keyKind: string;
}

export interface RequestObserved extends GenerationLabels {
  status: string;
  errorType: string;
  durationSeconds: number;
}

export interface GenerationObserved extends GenerationLabels {
  /** Undefined when the upstream produced no token. */
  timeToFirstTokenSeconds: number | undefined;
  /** From the first output token to the end; undefined when no token came. */
  afterFirstTokenSeconds: number | undefined;
  /** Undefined when the request never reached the upstream. */
  overheadSeconds: number | undefined;
  /** Undefined when no usage was recorded. */
  tokens: { input: number; output: number } | undefined;
}

function labelsOf(labels: GenerationLabels) {
  return {
    gen_ai_request_model: labels.model,
    gen_ai_response_model: labels.responseModel,
    gen_ai_operation_name: labels.operationName,
    gen_ai_provider_name: labels.providerName,
    endpoint: labels.endpoint,
    key_kind: labels.keyKind,
  };
}

function generationKeyOf(labels: GenerationLabels): string {
  return `${labels.model}\u0000${labels.responseModel}\u0000${labels.operationName}\u0000${labels.providerName}\u0000${labels.endpoint}\u0000${labels.keyKind}`;
}

/**
 * Label values come from small closed sets (metric-labels.ts); more combinations than this means a value
 * escaped its set, and the scrape would grow without bound.
 */
const labelCombinationsMax = 100_000;

/** Each combination's series, built the first time it is seen and the same ones after. */
class SeriesByCombination<Labels, Series> {
  private readonly seriesByKey = new Map<string, Series>();

  constructor(private readonly build: (labels: Labels) => Series) {}

  of(key: string, labels: Labels): Series {
    let series = this.seriesByKey.get(key);
    if (series === undefined) {
      assert(this.seriesByKey.size < labelCombinationsMax, "metric label combinations exceed their bound");
      series = this.build(labels);
      this.seriesByKey.set(key, series);
    }
    return series;
  }
}

const requestSeries = new SeriesByCombination((request: RequestObserved) => {
  const labels = { ...labelsOf(request), status: request.status, error_type: request.errorType };
  return { total: requestsTotal.series(labels), duration: requestDurationSeconds.series(labels) };
});

const generationSeries = new SeriesByCombination((generation: GenerationLabels) => {
  const labels = labelsOf(generation);
  return {
    timeToFirstToken: timeToFirstTokenSeconds.series(labels),
    overhead: overheadSeconds.series(labels),
    inputTokens: tokenUsage.series({ ...labels, gen_ai_token_type: "input" }),
    outputTokens: tokenUsage.series({ ...labels, gen_ai_token_type: "output" }),
    timePerOutputToken: timePerOutputTokenSeconds.series(labels),
  };
});

export const generationMetrics = {
  /** Every request, generation or not. */
  observeRequest(request: RequestObserved): void {
    const key = `${generationKeyOf(request)}\u0000${request.status}\u0000${request.errorType}`;
    const series = requestSeries.of(key, request);
    series.total.inc();
    series.duration.observe(request.durationSeconds);
  },

  /** The generation-only figures of a request that reached the upstream. */
  observeGeneration(generation: GenerationObserved): void {
    const series = generationSeries.of(generationKeyOf(generation), generation);
    if (generation.timeToFirstTokenSeconds !== undefined)
      series.timeToFirstToken.observe(generation.timeToFirstTokenSeconds);
    if (generation.overheadSeconds !== undefined) series.overhead.observe(generation.overheadSeconds);
    if (generation.tokens) {
      series.inputTokens.observe(generation.tokens.input);
      series.outputTokens.observe(generation.tokens.output);
      // The conventions' definition: the time after the first token over the tokens after the first.
      if (generation.afterFirstTokenSeconds !== undefined && generation.tokens.output > 1)
        series.timePerOutputToken.observe(generation.afterFirstTokenSeconds / (generation.tokens.output - 1));
    }
  },
};
