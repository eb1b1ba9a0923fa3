// The work queue: de-duplication, one worker per key, bounded concurrency, backoff with jitter;
// taking a key is O(1) (no copy of the keys waiting).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { backoffDelay, KeyFifo, WorkQueue, type Timers } from '../../src/reconciler/queue.ts';

/** Timers that fire only when told to. */
function manualTimers() {
  const pending: { fn: () => void; ms: number; id: number }[] = [];
  let next = 0;
  const timers: Timers = {
    set: (fn, ms) => {
      const id = ++next;
      pending.push({ fn, ms, id });
      return id;
    },
    clear: (h) => {
      const i = pending.findIndex((p) => p.id === h);
      if (i >= 0) pending.splice(i, 1);
    },
  };
  return { timers, pending, fireAll: () => pending.splice(0).forEach((p) => p.fn()) };
}

const tick = () => new Promise((r) => setImmediate(r));
function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

describe('WorkQueue', () => {
  it('a key added several times before a worker takes it runs once', async () => {
    const seen: string[] = [];
    const q = new WorkQueue({ workers: 2, handler: async (k) => void seen.push(k) });
    for (const k of ['ns/a', 'ns/a', 'ns/b', 'ns/a']) q.add(k);
    q.start();
    await q.shutdown();
    assert.deepEqual(seen, ['ns/a', 'ns/b']);
  });

  it('one worker per key: an add during a run queues one more run afterwards, never a parallel one', async () => {
    const gate = deferred();
    let running = 0;
    let maxRunning = 0;
    let runs = 0;
    const q = new WorkQueue({
      workers: 4,
      handler: async () => {
        runs++;
        running++;
        maxRunning = Math.max(maxRunning, running);
        if (runs === 1) await gate.promise;
        running--;
      },
    });
    q.start();
    q.add('ns/a');
    await tick();
    q.add('ns/a');
    q.add('ns/a');
    await tick();
    assert.equal(runs, 1);
    gate.resolve();
    await tick();
    await q.shutdown();
    assert.equal(runs, 2);
    assert.equal(maxRunning, 1);
  });

  it('bounded concurrency', async () => {
    const gates = new Map<string, ReturnType<typeof deferred>>();
    let running = 0;
    let maxRunning = 0;
    const q = new WorkQueue({
      workers: 2,
      handler: async (k) => {
        running++;
        maxRunning = Math.max(maxRunning, running);
        const g = deferred();
        gates.set(k, g);
        await g.promise;
        running--;
      },
    });
    for (let i = 0; i < 5; i++) q.add(`ns/${i}`);
    q.start();
    for (let round = 0; round < 5; round++) {
      await tick();
      for (const g of gates.values()) g.resolve();
    }
    await q.shutdown();
    assert.equal(maxRunning, 2);
    assert.equal(gates.size, 5);
  });

  it('nothing runs until started (a follower queues, the leader works)', async () => {
    let runs = 0;
    const q = new WorkQueue({ workers: 1, handler: async () => void runs++ });
    q.add('ns/a');
    await tick();
    assert.equal(runs, 0);
    assert.equal(q.length, 1);
    q.start();
    await q.shutdown();
    assert.equal(runs, 1);
  });

  it('a failure is retried after an exponential, jittered, capped delay; success resets it', async () => {
    const { timers, pending, fireAll } = manualTimers();
    const delays: number[] = [];
    let fail = 4;
    const q = new WorkQueue({
      workers: 1,
      timers,
      random: () => 0.5,
      backoff: { baseMs: 100, maxMs: 500, jitter: 0.2 },
      handler: async () => {
        if (fail-- > 0) throw new Error('conflict');
      },
      onRetry: (_k, _e, _attempt, delay) => delays.push(delay),
    });
    q.start();
    q.add('ns/a');
    for (let i = 0; i < 5; i++) {
      await tick();
      fireAll();
    }
    await q.shutdown();
    assert.deepEqual(delays, [100, 200, 400, 500]);
    assert.equal(q.failures('ns/a'), 0);
    assert.equal(pending.length, 0);
  });

  it('requeueAfter is a wait, not a failure', async () => {
    const { timers, pending } = manualTimers();
    const q = new WorkQueue({ workers: 1, timers, handler: async () => ({ requeueAfterMs: 3000 }) });
    q.start();
    q.add('ns/a');
    await tick();
    assert.deepEqual(
      pending.map((p) => p.ms),
      [3000],
    );
    assert.equal(q.failures('ns/a'), 0);
    // An event for the key cancels the wait and runs it now.
    q.add('ns/a');
    assert.equal(pending.length, 0);
    await q.shutdown();
  });

  it('an add during a run that asks for a requeue-after: one more run now, the wait dropped', async () => {
    const { timers, pending } = manualTimers();
    const gate = deferred();
    let runs = 0;
    const q = new WorkQueue({
      workers: 1,
      timers,
      handler: async () => {
        if (++runs === 1) await gate.promise;
        return { requeueAfterMs: 3000 };
      },
    });
    q.start();
    q.add('ns/a');
    await tick();
    q.add('ns/a');
    gate.resolve();
    while (runs < 2) await tick();
    await tick();
    assert.equal(runs, 2);
    // Only the second run's wait is pending (the second timer set): the wait counts from the last run.
    assert.deepEqual(
      pending.map((p) => [p.id, p.ms]),
      [[2, 3000]],
    );
    await q.shutdown();
  });

  it('an earlier delayed add replaces a later one', () => {
    const { timers, pending } = manualTimers();
    const q = new WorkQueue({ workers: 1, timers, handler: async () => {} });
    q.addAfter('ns/a', 5000);
    q.addAfter('ns/a', 1000);
    q.addAfter('ns/a', 3000);
    assert.deepEqual(
      pending.map((p) => p.ms),
      [1000],
    );
  });
});

describe('WorkQueue.addSoon (a batching window)', () => {
  it('adds within the window merge into one run; a key already queued or due sooner is left as it is; not counted as a retry', async () => {
    const { timers, pending, fireAll } = manualTimers();
    let runs = 0;
    let delayed = 0;
    const recorder = {
      added: () => {},
      taken: () => {},
      finished: () => {},
      delayed: () => void delayed++,
      watchRunning: () => {},
    };
    const q = new WorkQueue({ workers: 1, timers, recorder, handler: async () => void runs++ });
    q.addSoon('ns/a', 500);
    q.addSoon('ns/a', 500);
    q.addAfter('ns/b', 100);
    q.addSoon('ns/b', 500);
    assert.deepEqual(
      pending.map((p) => p.ms),
      [500, 100],
    );
    assert.equal(delayed, 1, 'only addAfter is a retry');
    q.start();
    fireAll();
    await tick();
    await tick();
    assert.equal(runs, 2);
    q.pause();
    q.add('ns/c');
    q.addSoon('ns/c', 500);
    assert.equal(pending.length, 0, 'already waiting to run: merged');
    await q.shutdown();
  });
});

describe('backoffDelay', () => {
  const b = { baseMs: 500, maxMs: 60_000, jitter: 0.2 };
  it('doubles per attempt, is capped, and jitter stays within the fraction', () => {
    assert.deepEqual(
      [1, 2, 3, 4].map((n) => backoffDelay(n, b, () => 0.5)),
      [500, 1000, 2000, 4000],
    );
    assert.equal(
      backoffDelay(20, b, () => 0.5),
      60_000,
    );
    assert.equal(
      backoffDelay(1, b, () => 0),
      400,
    );
    assert.equal(
      backoffDelay(1, b, () => 1),
      600,
    );
  });
});

describe('taking a key copies nothing (a resync queues every key at once)', () => {
  /**
   * Counts the elements every Set and Map iterator hands out while `fn` runs (spread, for…of,
   * Array.from, values(), keys(), entries(): the ways to copy or scan a set).
   */
  async function elementsIterated(fn: () => Promise<void>): Promise<number> {
    let steps = 0;
    const saved: [object, PropertyKey, PropertyDescriptor][] = [];
    const wrap = (proto: object, name: PropertyKey) => {
      const original = Object.getOwnPropertyDescriptor(proto, name)!;
      saved.push([proto, name, original]);
      const method = original.value as (this: unknown) => Iterator<unknown>;
      Object.defineProperty(proto, name, {
        ...original,
        value: function (this: unknown) {
          const it = method.call(this);
          return {
            next: () => {
              const r = it.next();
              if (!r.done) steps++;
              return r;
            },
            [Symbol.iterator]() {
              return this;
            },
          };
        },
      });
    };
    for (const proto of [Set.prototype, Map.prototype])
      for (const name of [Symbol.iterator, 'values', 'keys', 'entries']) wrap(proto, name);
    try {
      await fn();
    } finally {
      for (const [proto, name, original] of saved) Object.defineProperty(proto, name, original);
    }
    return steps;
  }

  it('draining n keys scans no set of waiting keys: O(1) per key, not O(n)', async () => {
    const n = 3000;
    const seen: string[] = [];
    const keys = Array.from({ length: n }, (_, i) => `ns/job-${i}`);
    const steps = await elementsIterated(async () => {
      const all = deferred();
      const q = new WorkQueue({
        workers: 4,
        handler: async (k) => {
          seen.push(k);
          if (seen.length === n) all.resolve();
        },
      });
      for (const k of keys) q.add(k);
      q.start();
      await all.promise;
      await q.shutdown();
    });
    // Every key ran once, in the order added (4 workers take them in turn).
    assert.deepEqual(seen, keys);
    // A copy of the waiting keys per take would hand out ~n²/2 = 4.5e6 elements.
    assert.ok(steps <= n, `set and map iterators handed out ${steps} elements for ${n} keys`);
  });

  it('KeyFifo: first in, first out, across its compaction of the taken front', () => {
    const fifo = new KeyFifo();
    const out: string[] = [];
    for (let i = 0; i < 5000; i++) fifo.push(`k${i}`);
    for (let i = 0; i < 3000; i++) out.push(fifo.shift()!);
    assert.equal(fifo.size, 2000);
    for (let i = 5000; i < 7000; i++) fifo.push(`k${i}`);
    for (let k = fifo.shift(); k !== undefined; k = fifo.shift()) out.push(k);
    assert.equal(fifo.size, 0);
    assert.equal(fifo.shift(), undefined);
    fifo.push('again');
    assert.equal(fifo.size, 1);
    assert.equal(fifo.shift(), 'again');
    assert.deepEqual(
      out,
      Array.from({ length: 7000 }, (_, i) => `k${i}`),
    );
  });
});
