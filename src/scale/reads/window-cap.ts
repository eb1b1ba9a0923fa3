// At most `limit` takes per window of `windowMs`: what bounds the quorum reads (from etcd) that
// count changes of callers not known to be the API server may cause (scale-check.ts). A fixed
// window, not a sliding one: the bound is on the order of the limit per window, which is all it is
// for, and it costs two numbers.
export class WindowCap {
  #windowStart = Number.NEGATIVE_INFINITY;
  #used = 0;
  readonly limit: number;
  readonly windowMs: number;
  readonly #now: () => number;

  constructor(limit: number, windowMs: number, now: () => number = () => performance.now()) {
    this.limit = limit;
    this.windowMs = windowMs;
    this.#now = now;
  }

  /** Takes one if the window has one left. */
  take(): boolean {
    const t = this.#now();
    if (t - this.#windowStart >= this.windowMs || t < this.#windowStart) {
      this.#windowStart = t;
      this.#used = 0;
    }
    if (this.#used >= this.limit) return false;
    this.#used++;
    return true;
  }
}
