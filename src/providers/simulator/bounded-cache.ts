/** A least-recently-used map with a fixed number of entries, so a cache can never grow without limit. */
export class BoundedCache<Key, Value> {
  private readonly entries = new Map<Key, Value>();

  constructor(private readonly entriesMax: number) {
    if (!Number.isInteger(entriesMax) || entriesMax < 1) throw new RangeError("entriesMax must be >= 1");
  }

  get(key: Key): Value | undefined {
    const value = this.entries.get(key);
    if (value === undefined) return undefined;
    // Re-insert so that Map's insertion order doubles as recency order.
    this.entries.delete(key);
    this.entries.set(key, value);
    return value;
  }

  set(key: Key, value: Value): void {
    this.entries.delete(key);
    this.entries.set(key, value);
    if (this.entries.size > this.entriesMax) {
      const oldest = this.entries.keys().next();
      if (!oldest.done) this.entries.delete(oldest.value);
    }
  }

  get size(): number {
    return this.entries.size;
  }
}
