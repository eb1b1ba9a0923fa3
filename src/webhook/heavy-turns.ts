// Heavy decisions take turns with everything else. A decision runs on the event loop to its end,
// and hostile bodies can take 0.2-0.8 s each to decide; decided in the order their bodies came
// in, six of them ahead of a real review made it wait seconds. A heavy body's parse and decision
// run one per turn of the event loop (setImmediate: after the I/O that turn brought in), so a
// light review waits for at most the one heavy decision under way.

export class HeavyTurns {
  readonly #queue: Array<() => void> = [];
  #scheduled = false;

  /** Runs `work` in a later turn of the event loop, after the heavy work queued before it. */
  run(work: () => void): void {
    this.#queue.push(work);
    if (!this.#scheduled) this.#schedule();
  }

  #schedule(): void {
    this.#scheduled = true;
    setImmediate(() => {
      const next = this.#queue.shift()!;
      if (this.#queue.length > 0) this.#schedule();
      else this.#scheduled = false;
      next();
    });
  }
}
