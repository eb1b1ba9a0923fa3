// The hand-off receiver: loopback only, validates the hint, answers 202 at once; the hint is then
// acted on only once the API server has stored the admitted change.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildHandoffServer, isLoopback } from '../../src/reconciler/handoff-server.ts';
import { parseHint, type Hint } from '../../src/handoff/hint.ts';
import { awaitPersisted, hintSatisfied } from '../../src/reconciler/hint-wait.ts';
import { createReconcilerMetrics } from '../../src/reconciler/metrics.ts';
import { createLogger } from '../../src/observability/logger.ts';
import type { TrainJob } from '../../src/api/objects.ts';

const hint: Hint = {
  namespace: 'team-a',
  name: 'llama-ft',
  uid: '6f1c0c1e-0000-4000-8000-000000000001',
  generation: 3,
};
const stored = (uid: string, generation: number): TrainJob => ({
  metadata: { name: 'llama-ft', namespace: 'team-a', uid, generation },
});

describe('parseHint', () => {
  it('accepts what the webhook sends (generation may be null)', () => {
    assert.deepEqual(parseHint(hint), { ok: true, hint });
    assert.deepEqual(parseHint({ ...hint, generation: null }), { ok: true, hint: { ...hint, generation: null } });
    assert.deepEqual(parseHint({ ...hint, generation: undefined }), { ok: true, hint: { ...hint, generation: null } });
  });

  for (const [what, body, message] of [
    ['not an object', [hint], /JSON object/],
    ['a bad namespace', { ...hint, namespace: 'Team_A' }, /namespace must be a DNS label/],
    ['a missing name', { ...hint, name: undefined }, /name must be a DNS subdomain/],
    ['a bad uid', { ...hint, uid: '../x' }, /uid must be an object uid/],
    ['generation 0', { ...hint, generation: 0 }, /generation must be a positive integer/],
    ['generation as text', { ...hint, generation: '3' }, /generation must be a positive integer/],
  ] as const) {
    it(`refuses ${what}`, () => {
      const got = parseHint(body);
      assert.equal(got.ok, false);
      assert.match(got.ok ? '' : got.error, message);
    });
  }
});

describe('hintSatisfied / awaitPersisted', () => {
  it('the stored object must have the hint uid and at least its generation', () => {
    assert.equal(hintSatisfied(hint, undefined), false);
    assert.equal(hintSatisfied(hint, stored(hint.uid, 2)), false, 'the admitted change is not stored yet');
    assert.equal(hintSatisfied(hint, stored(hint.uid, 3)), true);
    assert.equal(hintSatisfied(hint, stored(hint.uid, 4)), true);
    assert.equal(hintSatisfied(hint, stored('another-uid', 9)), false, 'a different object of the same name');
    assert.equal(hintSatisfied({ ...hint, generation: null }, stored(hint.uid, 1)), true);
  });

  it('waits until the change is stored', async () => {
    let reads = 0;
    const ok = await awaitPersisted(hint, async () => (++reads < 3 ? stored(hint.uid, 2) : stored(hint.uid, 3)), {
      timeoutMs: 60_000,
      intervalMs: 1,
    });
    assert.equal(ok, true);
    assert.equal(reads, 3);
  });

  it('drops a hint for an object that never was stored, after a bounded wait (read errors count as not yet)', async () => {
    let clock = 0;
    const sleeps: number[] = [];
    const ok = await awaitPersisted(
      hint,
      async () => {
        throw new Error('HTTP 500');
      },
      {
        timeoutMs: 1_000,
        intervalMs: 100,
        maxIntervalMs: 400,
        now: () => clock,
        sleep: async (ms) => void (sleeps.push(ms), (clock += ms)),
      },
    );
    assert.equal(ok, false);
    assert.deepEqual(sleeps, [100, 200, 400, 300]);
  });
});

describe('hand-off server', () => {
  let app: FastifyInstance;
  const received: Hint[] = [];
  const metrics = createReconcilerMetrics();
  before(async () => {
    app = await buildHandoffServer({ logger: createLogger('silent'), metrics, onHint: (h) => received.push(h) });
  });
  after(() => app.close());

  it('POST /hints with a hint: 202, handed on', async () => {
    const res = await app.inject({ method: 'POST', url: '/hints', payload: hint, remoteAddress: '127.0.0.1' });
    assert.equal(res.statusCode, 202);
    assert.deepEqual(received.at(-1), hint);
  });

  it('a bad hint: 400 with the reason, not handed on, counted', async () => {
    const before = received.length;
    const res = await app.inject({
      method: 'POST',
      url: '/hints',
      payload: { ...hint, uid: 7 },
      remoteAddress: '127.0.0.1',
    });
    assert.equal(res.statusCode, 400);
    assert.match(res.json().error, /uid must be an object uid/);
    const malformed = await app.inject({
      method: 'POST',
      url: '/hints',
      headers: { 'content-type': 'application/json' },
      payload: '{"namespace":',
      remoteAddress: '127.0.0.1',
    });
    assert.equal(malformed.statusCode, 400);
    assert.equal(received.length, before);
    const invalid = (await metrics.hints.get()).values.filter((v) => v.labels.result === 'invalid');
    assert.equal(
      invalid.reduce((n, v) => n + v.value, 0),
      2,
    );
  });

  it('from a non-loopback address: 403', async () => {
    const res = await app.inject({ method: 'POST', url: '/hints', payload: hint, remoteAddress: '10.0.0.7' });
    assert.equal(res.statusCode, 403);
  });

  it('anything else: 404 naming the one path; an oversized body: 413', async () => {
    assert.equal((await app.inject({ method: 'GET', url: '/', remoteAddress: '127.0.0.1' })).statusCode, 404);
    const big = await app.inject({
      method: 'POST',
      url: '/hints',
      payload: { ...hint, pad: 'x'.repeat(10_000) },
      remoteAddress: '127.0.0.1',
    });
    assert.equal(big.statusCode, 413);
  });

  it('isLoopback', () => {
    assert.deepEqual(['127.0.0.1', '::1', '::ffff:127.0.0.1', '10.0.0.1', undefined].map(isLoopback), [
      true,
      true,
      true,
      false,
      false,
    ]);
  });
});
