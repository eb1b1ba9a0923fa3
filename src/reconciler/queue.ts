// A de-duplicating work queue keyed by namespace/name, in the manner of client-go's workqueue:
// a key is queued at most once, worked on by at most one worker at a time (an add while it is
// being worked on runs it once more afterwards), with bounded concurrency, and failed keys retried
// with exponential backoff and jitter. Workers run only while the queue is started (the leader).

export interface HandlerResult {
  /** Look at the key again after this long (a wait, not a failure: the backoff is reset). */
  requeueAfterMs?: number;
}

export interface Backoff {
  baseMs: number;
  maxMs: number;
  /** Fraction of the delay added or taken at random: 0.2 spreads a 10 s delay over 8-12 s. */
  jitter: number;
}

export interface Timers {
  set(fn: () => void, ms: number): unknown;
  clear(handle: unknown): void;
}

/**
 * What the queue reports, in client-go's workqueue terms (and controller-runtime's reconcile
 * results); the metrics module turns it into Prometheus series. Durations in seconds.
 */
export interface QueueRecorder {
  /** A key became due (not merged into one already waiting); `depth` counts keys waiting to run. */
  added(depth: number): void;
  /** A worker took a key that waited `waitedSeconds` since it became due. */
  taken(depth: number, waitedSeconds: number): void;
  /** A run ended: `result` as controller-runtime names it. */
  finished(seconds: number, result: 'success' | 'requeue' | 'requeue_after' | 'error'): void;
  /** A key was added with a delay (a backoff or a requeue-after). */
  delayed(): void;
  /** Asks, when scraped, how long each running key has been running (seconds). */
  watchRunning(running: () => number[]): void;
}

export interface QueueOptions {
  workers: number;
  handler: (key: string) => Promise<HandlerResult | void>;
  backoff?: Backoff;
  /** Called for a failed attempt, with the delay before the next one. */
  onRetry?: (key: string, err: unknown, attempt: number, delayMs: number) => void;
  random?: () => number;
  timers?: Timers;
  recorder?: QueueRecorder;
}

export const DEFAULT_BACKOFF: Backoff = { baseMs: 500, maxMs: 60_000, jitter: 0.2 };

const realTimers: Timers = {
  set: (fn, ms) => {
    const t = setTimeout(fn, ms);
    t.unref();
    return t;
  },
  clear: (h) => clearTimeout(h as NodeJS.Timeout),
};

/** The delay before retry number `attempt` (1-based). */
export function backoffDelay(attempt: number, b: Backoff, random: () => number): number {
  const exp = Math.min(b.maxMs, b.baseMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(exp * (1 - b.jitter + 2 * b.jitter * random()));
}

/**
 * The keys waiting to run, in the order they became runnable (client-go's queue slice). Taking the
 * front is O(1): no copy of what waits (a resync queues every key at once: 10,000 keys taken one
 * by one through a copy each were ~5×10⁷ copies). No key is in it twice: the WorkQueue queues a
 * key only when it is not waiting already (its due time) and not running.
 */
export class KeyFifo {
  #keys: string[] = [];
  #head = 0;

  get size(): number {
    return this.#keys.length - this.#head;
  }

  push(key: string): void {
    this.#keys.push(key);
  }

  /** The oldest key, removed; undefined when none waits. */
  shift(): string | undefined {
    if (this.#head >= this.#keys.length) return undefined;
    const key = this.#keys[this.#head++];
    // Drop the taken front once it is half the array: each key is moved at most once more (amortized O(1)).
    if (this.#head >= 1024 && this.#head * 2 >= this.#keys.length) {
      this.#keys = this.#keys.slice(this.#head);
      this.#head = 0;
    } else if (this.#head === this.#keys.length) {
      this.#keys.length = 0;
      this.#head = 0;
    }
    return key;
  }
}

export class WorkQueue {
  readonly #opts: Required<Omit<QueueOptions, 'onRetry' | 'recorder'>> & Pick<QueueOptions, 'onRetry' | 'recorder'>;
  /** Runnable keys (neither running nor in it twice: add and #pump keep that). */
  readonly #queue = new KeyFifo();
  readonly #processing = new Set<string>();
  readonly #dirty = new Set<string>();
  readonly #failures = new Map<string, number>();
  readonly #delayed = new Map<string, { at: number; handle: unknown }>();
  readonly #inFlight = new Set<Promise<void>>();
  /** When each key waiting to run (queued, or dirty while running) became due; when each running key started. */
  readonly #dueAt = new Map<string, number>();
  readonly #startedAt = new Map<string, number>();
  #running = false;
  #closed = false;

  constructor(opts: QueueOptions) {
    this.#opts = { backoff: DEFAULT_BACKOFF, random: Math.random, timers: realTimers, ...opts };
    this.#opts.recorder?.watchRunning(() => {
      const now = performance.now();
      return [...this.#startedAt.values()].map((at) => (now - at) / 1000);
    });
  }

  /** Queue a key now (no-op if already queued; re-run after the current run if being worked on). */
  add(key: string): void {
    if (this.#closed) return;
    this.#cancelDelayed(key);
    if (this.#dueAt.has(key)) return; // already waiting to run: merged
    this.#dueAt.set(key, performance.now());
    if (this.#processing.has(key)) this.#dirty.add(key);
    else this.#queue.push(key);
    this.#opts.recorder?.added(this.#dueAt.size);
    this.#pump();
  }

  /** Queue a key after a delay; an earlier pending delay for the same key wins. */
  addAfter(key: string, ms: number): void {
    if (this.#closed) return;
    if (ms <= 0) return this.add(key);
    this.#opts.recorder?.delayed();
    this.#later(key, ms);
  }

  /**
   * Queue a key within a batching window: other adds of it meanwhile merge into one run (client-go's
   * AddAfter as kube-controller-manager's Job controller batches pod events). A key already waiting
   * to run, or due sooner, is left as it is; not a retry (workqueue_retries_total does not count it).
   */
  addSoon(key: string, windowMs: number): void {
    if (this.#closed || this.#dueAt.has(key)) return;
    if (windowMs <= 0) return this.add(key);
    this.#later(key, windowMs);
  }

  #later(key: string, ms: number): void {
    const at = Date.now() + ms;
    const pending = this.#delayed.get(key);
    if (pending && pending.at <= at) return;
    if (pending) this.#opts.timers.clear(pending.handle);
    const handle = this.#opts.timers.set(() => {
      this.#delayed.delete(key);
      this.add(key);
    }, ms);
    this.#delayed.set(key, { at, handle });
  }

  /** Start (or resume) the workers. */
  start(): void {
    this.#running = true;
    this.#pump();
  }

  /** Stop taking keys; keys stay queued. */
  pause(): void {
    this.#running = false;
  }

  /** Stop for good: nothing new is accepted, delayed adds are dropped, in-flight work finishes. */
  async shutdown(): Promise<void> {
    this.#closed = true;
    this.#running = false;
    for (const { handle } of this.#delayed.values()) this.#opts.timers.clear(handle);
    this.#delayed.clear();
    while (this.#inFlight.size) await Promise.all(this.#inFlight);
  }

  get length(): number {
    return this.#queue.size;
  }

  get active(): number {
    return this.#processing.size;
  }

  failures(key: string): number {
    return this.#failures.get(key) ?? 0;
  }

  #cancelDelayed(key: string): void {
    const pending = this.#delayed.get(key);
    if (!pending) return;
    this.#opts.timers.clear(pending.handle);
    this.#delayed.delete(key);
  }

  #pump(): void {
    while (this.#running && this.#processing.size < this.#opts.workers) {
      // The front: a queued key is never running (one added while running waits in #dirty).
      const key = this.#queue.shift();
      if (key === undefined) return;
      this.#processing.add(key);
      const now = performance.now();
      const due = this.#dueAt.get(key) ?? now;
      this.#dueAt.delete(key);
      this.#startedAt.set(key, now);
      this.#opts.recorder?.taken(this.#dueAt.size, (now - due) / 1000);
      const work = this.#work(key).finally(() => {
        this.#inFlight.delete(work);
        this.#processing.delete(key);
        this.#startedAt.delete(key);
        // Added while running: due since then, now runnable (counted once, when it was added);
        // it runs now, so a delay the run just asked for is dropped.
        if (this.#dirty.delete(key) && !this.#closed) {
          this.#cancelDelayed(key);
          this.#queue.push(key);
        }
        this.#pump();
      });
      this.#inFlight.add(work);
    }
  }

  async #work(key: string): Promise<void> {
    const started = performance.now();
    const finished = (result: Parameters<QueueRecorder['finished']>[1]) =>
      this.#opts.recorder?.finished((performance.now() - started) / 1000, result);
    try {
      const result = await this.#opts.handler(key);
      this.#failures.delete(key);
      const after = result?.requeueAfterMs;
      finished(after === undefined ? 'success' : after > 0 ? 'requeue_after' : 'requeue');
      if (after !== undefined) this.addAfter(key, after);
    } catch (err) {
      finished('error');
      const attempt = (this.#failures.get(key) ?? 0) + 1;
      this.#failures.set(key, attempt);
      const delay = backoffDelay(attempt, this.#opts.backoff, this.#opts.random);
      this.#opts.onRetry?.(key, err, attempt, delay);
      this.addAfter(key, delay);
    }
  }
}
