/**
 * Work that takes turns by key within this process: a `run` starts once every earlier `run` of the same key
 * has settled, whatever its outcome; runs of different keys go side by side. The map holds only keys with a
 * run pending, so it stays as small as the work in flight.
 */
export class KeyedTurns {
  private readonly tails = new Map<string, Promise<void>>();

  run<T>(key: string, work: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    const current = previous.then(work);
    const tail = current.then(
      () => {},
      () => {},
    );
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return current;
  }

  /** Keys with a run pending (tests: the map empties once the work is done). */
  get pendingKeys(): number {
    return this.tails.size;
  }
}
