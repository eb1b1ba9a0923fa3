// The cache's hash-consing (src/reconciler/intern.ts): equal strings and parts of the kept objects
// are one frozen value, a stored object's top level is always its own, and nothing read changes.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Generations, intern } from '../../src/reconciler/intern.ts';

const jobSet = (name: string) => ({
  metadata: { name, namespace: 'bench', uid: `uid-${name}` },
  spec: { suspend: true, replicatedJobs: [{ name: 'node', template: { spec: { parallelism: 1 } } }] },
});

describe('intern: one copy of what repeats', () => {
  it('equal parts of two objects are the same frozen value; the top levels and what differs are their own', () => {
    const a = intern(jobSet('a'));
    const b = intern(jobSet('b'));
    assert.equal(a.spec, b.spec);
    assert.ok(Object.isFrozen(a.spec));
    assert.notEqual(a, b);
    assert.notEqual(a.metadata, b.metadata);
    assert.deepEqual(a, jobSet('a'));
    assert.deepEqual(b, jobSet('b'));
  });

  it('two equal objects stay two (the informer tells an update from a resync by identity)', () => {
    assert.notEqual(intern(jobSet('a')), intern(jobSet('a')));
  });

  it('the input is not changed, nor frozen', () => {
    const raw = jobSet('c');
    const before = structuredClone(raw);
    intern(raw);
    assert.deepEqual(raw, before);
    assert.ok(!Object.isFrozen(raw.spec));
  });

  it('values a parse does not make are kept as they are, and told apart: null, undefined, a Date', () => {
    const when = new Date(0);
    const out = intern({ a: { x: null }, b: { x: undefined }, c: { t: when } });
    assert.equal(out.a.x, null);
    assert.equal(out.b.x, undefined);
    assert.ok('x' in out.b);
    assert.equal(out.c.t, when);
  });

  it('a "__proto__" key a parse made stays a key, at every level (never the copy\'s prototype)', () => {
    const raw = JSON.parse('{"__proto__": {"polluted": true}, "spec": {"__proto__": {"x": 1}}}') as object;
    const out = intern(raw) as Record<string, unknown>;
    assert.equal(Object.getPrototypeOf(out), Object.prototype);
    assert.equal((out as { polluted?: unknown }).polluted, undefined);
    assert.deepEqual(Object.keys(out), ['__proto__', 'spec']);
    assert.deepEqual(Object.keys(out.spec as object), ['__proto__']);
  });

  it('a subtree too large to share is still copied whole and right; its small parts shared', () => {
    const big = { text: 'x'.repeat(5000), part: { kind: 'Shared' } };
    const a = intern({ big });
    const b = intern({ big: structuredClone(big) });
    assert.notEqual(a.big, b.big);
    assert.equal(a.big.part, b.big.part);
    assert.deepEqual(a, { big });
  });

  it('past its bound the table starts over: tens of thousands of unique values, every copy still equal', () => {
    for (let i = 0; i < 40_000; i++) {
      const o = { metadata: { name: `n-${i}`, uid: `u-${i}` }, spec: { suspend: i % 2 === 0 } };
      assert.deepEqual(intern(o), o);
    }
    assert.equal(intern({ s: { suspend: true } }).s, intern({ s: { suspend: true } }).s);
  });
});

describe('the intern tables (Generations): bounded, and a collision is a miss', () => {
  const equal = (a: { v: number }, b: { v: number }) => a.v === b.v;
  it('an equal value under the same key is the known one; an unequal one under it (a hash collision) is its own', () => {
    const g = new Generations<{ v: number }>(10);
    const first = { v: 1 };
    assert.equal(g.get('k', first, equal), first);
    assert.equal(g.get('k', { v: 1 }, equal), first);
    const other = { v: 2 };
    assert.equal(g.get('k', other, equal), other, 'a collision: not the known value');
  });
  it('the older generation is dropped when the newer fills, by entries', () => {
    const g = new Generations<string>(2);
    for (const k of ['a', 'b', 'c', 'd', 'e']) g.get(k, k);
    assert.equal(g.size, 3, 'the newer generation (e) and the older one (c, d)');
  });
  it('and by weight: a generation holds at most its weight', () => {
    const g = new Generations<string>(1000, 10);
    for (let i = 0; i < 20; i++) g.get(`k${i}`, `v${i}`, undefined, 4);
    // Two entries of weight 4 fit in 10: the two generations hold at most four.
    assert.ok(g.size <= 4, `held ${g.size}`);
    const first = 'x';
    const h = new Generations<string>(1000, 10);
    h.get('x', first, undefined, 4);
    for (let i = 0; i < 4; i++) h.get(`y${i}`, `y${i}`, undefined, 4);
    assert.notEqual(
      h.get('x', 'x2', () => true, 4),
      first,
      'x rotated out: a miss',
    );
  });
});
