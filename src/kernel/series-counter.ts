import { Counter, type CounterConfiguration, type LabelValues } from "prom-client";

/**
 * A prom-client counter whose label combinations are resolved once: `series(labels)` hands back a handle a
 * hot path keeps, and counting on it adds to a number. What was counted reaches prom-client when it is
 * read (a scrape), one `inc` per combination, so prom-client's label checks and hashing run per scrape
 * rather than per request; the scrape shows exactly what it showed before.
 */
export class SeriesCounter<T extends string> extends Counter<T> {
  private readonly seriesByKey = new Map<string, CounterSeries<T>>();

  constructor(configuration: CounterConfiguration<T>) {
    super(configuration);
  }

  /** The handle of one label combination; its labels are checked by prom-client when it is created. */
  series(labels: LabelValues<T>): CounterSeries<T> {
    const key = keyOf(labels);
    let series = this.seriesByKey.get(key);
    if (series === undefined) {
      // Shows the combination at 0 from now on, as a first `inc` would, and validates its labels.
      this.inc(labels, 0);
      series = new CounterSeries({ ...labels });
      this.seriesByKey.set(key, series);
    }
    return series;
  }

  override async get(): Promise<Awaited<ReturnType<Counter<T>["get"]>>> {
    for (const series of this.seriesByKey.values()) {
      const pending = series.takePending();
      if (pending > 0) this.inc(series.labels, pending);
    }
    return super.get();
  }

  /** Handles kept by callers stay valid: what they counted and prom-client had not read is dropped too. */
  override reset(): void {
    super.reset();
    // prom-client's constructor resets too, before this class's fields exist.
    for (const series of this.seriesByKey?.values() ?? []) series.takePending();
  }
}

/** One label combination's count since prom-client last read it. */
export class CounterSeries<T extends string> {
  private pending = 0;

  constructor(readonly labels: LabelValues<T>) {}

  inc(): void {
    this.pending += 1;
  }

  takePending(): number {
    const pending = this.pending;
    this.pending = 0;
    return pending;
  }
}

/** The key a combination is filed under: its labels in name order, as prom-client hashes them. */
function keyOf(labels: Record<string, string | number | undefined>): string {
  return Object.keys(labels)
    .sort()
    .map((name) => `${name}=${String(labels[name])}`)
    .join("\u0000");
}
