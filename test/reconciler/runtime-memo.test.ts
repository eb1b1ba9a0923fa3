// Trainer's runtime snapshots remembered per TrainJob (src/reconciler/runtime-memo.ts): equal
// snapshots are one frozen read, checked against each TrainJob's uid, dropped with the last user.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { RuntimeRead } from '../../src/rebuild/decision.ts';
import { RuntimeMemo } from '../../src/reconciler/runtime-memo.ts';

const read = (numNodes = 1): RuntimeRead => ({
  found: true,
  snapshot: true,
  runtime: { kind: 'ClusterTrainingRuntime', name: 'torch', spec: { mlPolicy: { numNodes, torch: {} } } },
});

describe('RuntimeMemo', () => {
  it('equal snapshots of two TrainJobs are one read, equal to each, frozen; the callers’ reads stay theirs', () => {
    const memo = new RuntimeMemo();
    const a = read();
    memo.set('ns/a', 'uid-a', a);
    memo.set('ns/b', 'uid-b', read());
    assert.equal(memo.get('ns/a', 'uid-a'), memo.get('ns/b', 'uid-b'));
    assert.deepEqual(memo.get('ns/a', 'uid-a'), a);
    assert.ok(Object.isFrozen(memo.get('ns/a', 'uid-a')));
    assert.ok(!Object.isFrozen(a));
    assert.equal(memo.distinct, 1);
    assert.equal(memo.size, 2);
  });

  it('a different snapshot is its own read', () => {
    const memo = new RuntimeMemo();
    memo.set('ns/a', 'uid-a', read(1));
    memo.set('ns/b', 'uid-b', read(2));
    assert.notEqual(memo.get('ns/a', 'uid-a'), memo.get('ns/b', 'uid-b'));
    assert.equal(memo.distinct, 2);
  });

  it('another uid (the TrainJob re-created) is a miss', () => {
    const memo = new RuntimeMemo();
    memo.set('ns/a', 'uid-a', read());
    assert.equal(memo.get('ns/a', 'uid-other'), undefined);
    assert.equal(memo.get('ns/a', undefined), undefined);
  });

  it('a read without a snapshot, or a forgotten key, drops it; the shared read goes with its last user', () => {
    const memo = new RuntimeMemo();
    memo.set('ns/a', 'uid-a', read());
    memo.set('ns/b', 'uid-b', read());
    const { runtime } = read() as Extract<RuntimeRead, { found: true }>;
    memo.set('ns/a', 'uid-a', { found: true, runtime });
    assert.equal(memo.get('ns/a', 'uid-a'), undefined);
    assert.equal(memo.distinct, 1);
    memo.forget('ns/b');
    assert.equal(memo.get('ns/b', 'uid-b'), undefined);
    assert.equal(memo.distinct, 0);
    memo.set('ns/c', 'uid-c', { found: false, reason: 'gone' });
    assert.equal(memo.size, 0);
  });

  it('the read the memo gave, set again (each reconcile does), is kept as it is: the same object, counted once', () => {
    const memo = new RuntimeMemo();
    memo.set('ns/a', 'uid-a', read());
    const held = memo.get('ns/a', 'uid-a');
    assert.ok(held);
    memo.set('ns/a', 'uid-a', held);
    assert.equal(memo.get('ns/a', 'uid-a'), held);
    assert.equal(memo.size, 1);
    assert.equal(memo.distinct, 1);
    memo.forget('ns/a');
    assert.equal(memo.distinct, 0);
  });

  it('that read set for another uid (the TrainJob re-created) is remembered for the new uid only', () => {
    const memo = new RuntimeMemo();
    memo.set('ns/a', 'uid-a', read());
    const held = memo.get('ns/a', 'uid-a');
    assert.ok(held);
    memo.set('ns/a', 'uid-b', held);
    assert.equal(memo.get('ns/a', 'uid-a'), undefined);
    assert.deepEqual(memo.get('ns/a', 'uid-b'), held);
    assert.equal(memo.distinct, 1);
  });

  it('a key set again with the same snapshot is counted once', () => {
    const memo = new RuntimeMemo();
    memo.set('ns/a', 'uid-a', read());
    memo.set('ns/a', 'uid-a', read());
    memo.forget('ns/a');
    assert.equal(memo.distinct, 0);
  });
});
