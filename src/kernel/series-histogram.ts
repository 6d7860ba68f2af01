import { type Aggregator, Histogram, type HistogramConfiguration, type LabelValues } from "prom-client";
import { assert } from "./assert";

/**
 * A prom-client histogram whose label combinations are resolved once: `series(labels)` hands back the
 * combination's own counts, which a hot path keeps, and observing one is a bucket search and three additions. prom-client's own
 * `observe` validates the labels and hashes them (sorting their names) on every call, which made a
 * request's metrics cost more than the rest of its observation. The scrape shows exactly what prom-client
 * shows (same lines, same order: combinations as first observed), built from these counts.
 */
export class SeriesHistogram<T extends string> extends Histogram<T> {
  private readonly seriesByKey = new Map<string, HistogramSeries>();
  private readonly bounds: readonly number[];
  private readonly labelNames: ReadonlySet<string>;
  private readonly metricName: string;
  private readonly metricHelp: string;
  private readonly metricAggregator: Aggregator;

  constructor(configuration: HistogramConfiguration<T> & { buckets: readonly number[] }) {
    super({ ...configuration, buckets: [...configuration.buckets] });
    this.bounds = [...configuration.buckets].sort((left, right) => left - right);
    this.labelNames = new Set(configuration.labelNames ?? []);
    this.metricName = configuration.name;
    this.metricHelp = configuration.help;
    this.metricAggregator = configuration.aggregator ?? "sum";
    // Every observation goes through a series, so the scrape below sees all of them.
    this.observe = ((labels: LabelValues<T> | number, value?: number) => {
      if (typeof labels === "number") this.series({}).observe(labels);
      else this.series(labels).observe(value ?? Number.NaN);
    }) as Histogram<T>["observe"];
  }

  /** The counts of one label combination; its labels are checked here, once, as prom-client checks them. */
  series(labels: LabelValues<T>): HistogramSeries {
    const key = keyOf(labels);
    let series = this.seriesByKey.get(key);
    if (series === undefined) {
      for (const name of Object.keys(labels))
        assert(this.labelNames.has(name), `label ${name} is not one of ${this.metricName}'s`);
      series = new HistogramSeries(this.bounds, { ...labels } as Readonly<Record<string, string | number>>);
      this.seriesByKey.set(key, series);
    }
    return series;
  }

  /**
   * What the registry formats (and prom-client's `get` splays for JSON): prom-client's value pairs for each
   * combination, cumulative buckets first.
   */
  async getForPromString() {
    const values: PromStringValue[] = [];
    const bucketName = `${this.metricName}_bucket`;
    for (const series of this.seriesByKey.values()) {
      // A combination shows from its first observation on, as in prom-client.
      if (series.count === 0) continue;
      let cumulative = 0;
      for (const [index, bound] of this.bounds.entries()) {
        cumulative += series.bucketCounts[index]!;
        values.push(pairOf({ le: bound }, cumulative, bucketName, null, series.labels));
      }
      values.push(
        pairOf({ le: "+Inf" }, series.count, bucketName, null, series.labels),
        pairOf({}, series.sum, `${this.metricName}_sum`, undefined, series.labels),
        pairOf({}, series.count, `${this.metricName}_count`, undefined, series.labels),
      );
    }
    return {
      name: this.metricName,
      help: this.metricHelp,
      type: "histogram" as const,
      values,
      aggregator: this.metricAggregator,
    };
  }

  /** Handles kept by callers stay valid; their combinations show again once observed again. */
  override reset(): void {
    super.reset();
    // prom-client's constructor resets too, before this class's fields exist.
    for (const series of this.seriesByKey?.values() ?? []) series.clear();
  }
}

/** One label combination's counts: per bucket (not cumulative), their sum and how many. */
export class HistogramSeries {
  readonly bucketCounts: Float64Array;
  sum = 0;
  count = 0;

  constructor(
    private readonly bounds: readonly number[],
    readonly labels: Readonly<Record<string, string | number>>,
  ) {
    this.bucketCounts = new Float64Array(bounds.length);
  }

  observe(value: number): void {
    if (!Number.isFinite(value)) throw new TypeError(`Value is not a valid number: ${value}`);
    // A value above every bound counts only in +Inf (the count), as prom-client counts it.
    const index = this.bounds.findIndex((bound) => value <= bound);
    if (index !== -1) this.bucketCounts[index]! += 1;
    this.sum += value;
    this.count += 1;
  }

  clear(): void {
    this.bucketCounts.fill(0);
    this.sum = 0;
    this.count = 0;
  }
}

interface PromStringValue {
  labels: Record<string, string | number>;
  sharedLabels: Readonly<Record<string, string | number>>;
  value: number;
  metricName: string;
  exemplar: null | undefined;
}

function pairOf(
  labels: Record<string, string | number>,
  value: number,
  metricName: string,
  exemplar: null | undefined,
  sharedLabels: Readonly<Record<string, string | number>>,
): PromStringValue {
  return { labels, sharedLabels, value, metricName, exemplar };
}

/** The key a combination is filed under: its labels in name order, as prom-client hashes them. */
function keyOf(labels: Record<string, string | number | undefined>): string {
  return Object.keys(labels)
    .sort()
    .map((name) => `${name}=${String(labels[name])}`)
    .join("\u0000");
}
