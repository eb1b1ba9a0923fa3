// A bound on the request bodies held in memory at once. A body is buffered whole before it is
// parsed, and an UPDATE may carry 7 MiB; the decision itself is synchronous, so bodies read
// concurrently only wait for their turn, and without a bound 100 slow senders of 7 MiB would
// hold 700 MiB. Each request takes its Content-Length (a full body limit when it has none) from
// a byte budget before its body is read, and gives it back when its response is done; a request
// that does not fit waits (its socket is not read: TCP holds the rest) rather than failing.
// A small body (LIGHT_BODY_BYTES, every real TrainJob review but the largest) is not held here:
// it would wait behind 7 MiB bodies in the queue, and what it holds once read is bounded by the
// decision budget (decision-budget.ts).
import type { ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';

/**
 * Two maximum-size bodies: one being decided while the next is read. More buys no throughput
 * (one core decides one at a time) and costs ~7-14 MB of string each (bench/PROFILE.md, memory).
 * Ordinary bodies (a few KB) pass by the thousand.
 */
export const MAX_SIZE_BODIES_IN_FLIGHT = 2;

/** Bodies no larger than this (with a Content-Length) are read without waiting for the budget. */
export const LIGHT_BODY_BYTES = 256 * 1024;

export class ByteBudget {
  readonly capacity: number;
  #used = 0;
  #peak = 0;
  readonly #waiting: Array<{ bytes: number; grant: () => void }> = [];

  constructor(capacity: number) {
    this.capacity = capacity;
  }

  get used(): number {
    return this.#used;
  }

  /** The most bytes ever held at once. */
  get peak(): number {
    return this.#peak;
  }

  get waiting(): number {
    return this.#waiting.length;
  }

  /** Resolves once `bytes` (at most the capacity) are taken; the returned function gives them back (once). */
  async acquire(bytes: number): Promise<() => void> {
    const n = this.#clamp(bytes);
    if (!this.tryTake(n)) await new Promise<void>((grant) => this.#waiting.push({ bytes: n, grant }));
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.give(n);
    };
  }

  /**
   * Takes `bytes` (at most the capacity) at once when they fit and nobody waits, without a
   * promise (the common case at the HTTP edge); false when the caller must wait in `acquire`.
   */
  tryTake(bytes: number): boolean {
    const n = this.#clamp(bytes);
    if (this.#waiting.length > 0 || this.#used + n > this.capacity) return false;
    this.#take(n);
    return true;
  }

  /** Gives back bytes taken by `tryTake` (clamped the same way); the caller gives each take back once. */
  give(bytes: number): void {
    this.#used -= this.#clamp(bytes);
    this.#grantWaiting();
  }

  #clamp(bytes: number): number {
    return Math.min(Math.max(bytes, 0), this.capacity);
  }

  #take(n: number): void {
    this.#used += n;
    if (this.#used > this.#peak) this.#peak = this.#used;
  }

  /** First come, first served: a large body is not overtaken forever by small ones. */
  #grantWaiting(): void {
    while (this.#waiting.length > 0 && this.#used + this.#waiting[0].bytes <= this.capacity) {
      const next = this.#waiting.shift()!;
      this.#take(next.bytes);
      next.grant();
    }
  }
}

/** The bytes a response holds in the budget, given back by one shared listener (no closure per request). */
const heldBytes = Symbol('heldBytes');
type HoldingResponse = ServerResponse & { [heldBytes]?: number };

/** Holds every request's body bytes in `budget` from before its body is read until its response is done. */
export function boundBodiesInFlight(app: FastifyInstance, budget: ByteBudget, bodyLimit: number): void {
  function giveBack(this: HoldingResponse): void {
    const bytes = this[heldBytes];
    if (bytes === undefined) return;
    this[heldBytes] = undefined;
    budget.give(bytes);
  }
  const hold = (res: HoldingResponse, bytes: number): void => {
    // 'close' comes once the response is sent, or when the client goes away first.
    if (res.writableFinished || res.destroyed) return budget.give(bytes);
    res[heldBytes] = bytes;
    res.once('close', giveBack);
  };
  // A callback-style hook: a body that fits is taken synchronously, with no promise per request.
  app.addHook('preParsing', (request, reply, payload, done) => {
    const length = Number(request.headers['content-length']);
    // Refused before it is read (413): nothing to hold.
    if (Number.isFinite(length) && (length > bodyLimit || length <= LIGHT_BODY_BYTES)) return done(null, payload);
    const bytes = Number.isFinite(length) ? length : bodyLimit;
    if (budget.tryTake(bytes)) {
      hold(reply.raw, bytes);
      return done(null, payload);
    }
    budget.acquire(bytes).then(
      (release) => {
        if (reply.raw.writableFinished || reply.raw.destroyed) release();
        else reply.raw.once('close', release);
        done(null, payload);
      },
      (err: Error) => done(err),
    );
  });
}
