// One read in flight per key: what bounds the reads that forged reviews of one object can cause.
// A review that needs a read already under way shares it; an entry leaves when its read settles,
// so nothing settled is kept and the next review reads afresh.

/**
 * One read in flight per key: a judgment that needs a read already under way shares it (the key
 * says what makes two reads the same: a read started a moment earlier is no staler). Holds only
 * reads in flight: an entry leaves when its read settles.
 */
export class Coalesced {
  readonly #inFlight = new Map<string, Promise<unknown>>();

  /** Reads in flight now. */
  get size(): number {
    return this.#inFlight.size;
  }

  run<T>(key: string, read: () => Promise<T>): Promise<T> {
    const under = this.#inFlight.get(key);
    if (under) return under as Promise<T>;
    const started = read().finally(() => this.#inFlight.delete(key));
    this.#inFlight.set(key, started);
    return started;
  }
}
