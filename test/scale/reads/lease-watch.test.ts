// The reconciler's Lease as its watch delivered it (src/scale/reads/lease-watch.ts): trusted only from an
// event of a running watch, for at most its trust window, never across the watch's end; otherwise the
// scale check GETs the Lease as before.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { LEASE_TRUST_MS, WatchedLease } from '../../../src/scale/reads/lease-watch.ts';

const lease = (holder: string) => ({
  metadata: { name: 'trainjob-webhook-reconciler', namespace: 'kubeflow-system' },
  spec: { holderIdentity: holder, leaseDurationSeconds: 15, renewTime: '2026-12-03T09:00:00.000000Z' },
});

describe('the watched Lease', () => {
  it('is unknown (read by GET) before the watch delivered anything', () => {
    assert.equal(new WatchedLease().read(0), undefined);
  });

  it('is the last ADDED or MODIFIED object, found', () => {
    const w = new WatchedLease();
    w.onEvent('ADDED', lease('a'), 100);
    assert.deepEqual(w.read(100), { kind: 'found', value: lease('a') });
    w.onEvent('MODIFIED', lease('b'), 200);
    assert.deepEqual(w.read(250), { kind: 'found', value: lease('b') });
  });

  it('is absent after DELETED', () => {
    const w = new WatchedLease();
    w.onEvent('ADDED', lease('a'), 0);
    w.onEvent('DELETED', lease('a'), 10);
    assert.deepEqual(w.read(20), { kind: 'absent' });
  });

  it('is unknown once the watch ended, until the next watch delivers', () => {
    const w = new WatchedLease();
    w.onEvent('ADDED', lease('a'), 0);
    w.onEnded();
    assert.equal(w.read(1), undefined);
    w.onEvent('BOOKMARK', { metadata: { resourceVersion: '9' } }, 2);
    assert.equal(w.read(3), undefined, 'a bookmark says nothing about the object');
    w.onEvent('ADDED', lease('b'), 4);
    assert.deepEqual(w.read(5), { kind: 'found', value: lease('b') });
  });

  it(`is trusted for ${LEASE_TRUST_MS} ms after the last event (a bookmark renews the trust), then read again`, () => {
    const w = new WatchedLease();
    w.onEvent('ADDED', lease('a'), 1_000);
    assert.notEqual(w.read(1_000 + LEASE_TRUST_MS), undefined);
    assert.equal(w.read(1_000 + LEASE_TRUST_MS + 1), undefined);
    w.onEvent('BOOKMARK', {}, 20_000);
    assert.deepEqual(w.read(20_000 + LEASE_TRUST_MS), { kind: 'found', value: lease('a') });
  });

  it('is not trusted when the clock runs backwards past the last event', () => {
    const w = new WatchedLease(5_000);
    w.onEvent('ADDED', lease('a'), 1_000);
    assert.equal(w.read(999), undefined);
  });

  it('ignores other event types', () => {
    const w = new WatchedLease();
    w.onEvent('ADDED', lease('a'), 0);
    w.onEvent('WHATEVER', lease('b'), 1);
    assert.deepEqual(w.read(2), { kind: 'found', value: lease('a') });
  });
});
