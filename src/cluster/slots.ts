// At most N exchanges at once, the rest waiting in order. The agents' maxSockets bounds the
// connections only once a socket exists: a tunnel built asynchronously (a CONNECT through an HTTP
// proxy) is counted when it is up, so concurrent requests each opened their own.

export class Slots {
  #free: number;
  readonly #waiting: (() => void)[] = [];

  constructor(size: number) {
    this.#free = size;
  }

  /** Resolves once a slot is taken; rejects (and takes none) if `signal` aborts first. */
  async acquire(signal: AbortSignal): Promise<void> {
    signal.throwIfAborted();
    if (this.#free > 0) {
      this.#free--;
      return;
    }
    await new Promise<void>((resolve, reject) => {
      const granted = () => {
        signal.removeEventListener('abort', aborted);
        resolve();
      };
      const aborted = () => {
        const at = this.#waiting.indexOf(granted);
        if (at >= 0) this.#waiting.splice(at, 1);
        reject(signal.reason);
      };
      signal.addEventListener('abort', aborted, { once: true });
      this.#waiting.push(granted);
    });
  }

  /** Gives a slot back: to the first waiting, or to the free ones. */
  release(): void {
    const next = this.#waiting.shift();
    if (next) next();
    else this.#free++;
  }
}
